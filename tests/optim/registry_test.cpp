// Optimizers and schedulers by name (src/optim/registry.cpp): every name builds and steps, an unknown
// name lists the known ones.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/optim/optimizers.h"
#include "baton/optim/scheduler.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

TEST(OptimRegistry, EveryOptimizerBuildsAndStepsDownhill) {
  for (const std::string& name : optimizer_names()) {
    SCOPED_TRACE(name);
    at::Tensor w = torch::full({4}, 2.0).requires_grad_(true);
    const auto optimizer = make_optimizer(OptimizerOptions().name(name).lr(0.01), {w});
    for (int step = 0; step < 3; ++step) {
      optimizer->zero_grad();
      (w * w).sum().backward();
      optimizer->step();
    }
    EXPECT_LT(w.detach().abs().max().item<double>(), 2.0);
  }
}

TEST(OptimRegistry, EverySchedulerBuildsAndGivesARate) {
  const ScheduleClock clock{/*batches_per_epoch=*/10, /*batch_size=*/32, /*max_batches=*/100};
  for (const std::string& name : scheduler_names()) {
    SCOPED_TRACE(name);
    const auto scheduler = make_scheduler(SchedulerOptions().name(name));
    EXPECT_EQ(scheduler->name().empty(), false);
    for (double batch : {0.0, 50.0, 99.0}) {
      const double lr = scheduler->lr(0.1, batch, clock);
      EXPECT_GE(lr, 0.0);
      EXPECT_LE(lr, 0.1 + 1e-12);  // one_cycle peaks at max_lr, the base rate unless set
    }
  }
}

TEST(OptimRegistry, UnknownNamesListTheKnownOnes) {
  at::Tensor w = torch::zeros({1}).requires_grad_(true);
  EXPECT_THAT(error_of([&] { make_optimizer(OptimizerOptions().name("adamm"), {w}); }),
              ::testing::AllOf(HasSubstr("unknown optimizer 'adamm' (known: "), HasSubstr("did you mean 'adam'?")));
  EXPECT_THAT(error_of([] { make_scheduler(SchedulerOptions().name("cosine")); }),
              ::testing::AllOf(HasSubstr("unknown scheduler 'cosine' (known: "), HasSubstr("cosine_warmup")));
}

}  // namespace
}  // namespace baton
