#include "baton/optim/capturable_step.h"

#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/optim/optimizers.h"

namespace baton {
namespace {

struct Run {
  std::vector<at::Tensor> params;
  std::shared_ptr<torch::optim::Optimizer> optimizer;
};

Run make_run(const OptimizerOptions& spec) {
  torch::manual_seed(1);
  Run r;
  r.params = {torch::randn({4, 3}).requires_grad_(), torch::randn({5}).requires_grad_()};
  r.optimizer = make_optimizer(spec, r.params);
  return r;
}

// The same gradients into both runs' parameters.
void set_gradients(Run& a, Run& b, int step) {
  for (std::size_t i = 0; i < a.params.size(); ++i) {
    const at::Tensor g = torch::randn(a.params[i].sizes()) * (1.0 + 0.01 * step);
    a.params[i].mutable_grad() = g.clone();
    b.params[i].mutable_grad() = g.clone();
  }
}

// A learning rate and momentum that change every step, as one_cycle's do.
void schedule(Run& r, int step) {
  for (auto& group : r.optimizer->param_groups()) {
    group.options().set_lr(0.01 * (1.0 + 0.5 * std::sin(step * 0.1)));
    if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&group.options()); sgd && sgd->momentum() > 0) {
      sgd->momentum(0.85 + 0.1 * std::cos(step * 0.05));
    }
  }
}

double max_difference(const Run& a, const Run& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.params.size(); ++i) {
    worst = std::max(worst, (a.params[i] - b.params[i]).abs().max().item<double>());
  }
  return worst;
}

// 200 steps of LibTorch's optimizer against the capturable step on the same gradients and
// schedule, the first and the last eager in both (the state carries over both ways).
void expect_same_as_eager(const OptimizerOptions& spec) {
  SCOPED_TRACE(spec.name());
  Run eager = make_run(spec);
  Run captured = make_run(spec);
  torch::manual_seed(2);
  set_gradients(eager, captured, 0);
  eager.optimizer->step();
  captured.optimizer->step();
  CapturableStep step(captured.optimizer);
  for (int s = 1; s < 200; ++s) {
    set_gradients(eager, captured, s);
    schedule(eager, s);
    schedule(captured, s);
    eager.optimizer->step();
    step.prepare();
    step.run();
  }
  set_gradients(eager, captured, 200);
  eager.optimizer->step();
  captured.optimizer->step();
  EXPECT_LT(max_difference(eager, captured), 1e-5);
  EXPECT_GT((eager.params[0] - make_run(spec).params[0]).abs().max().item<double>(), 0.05);  // it trained
}

TEST(CapturableStep, MatchesLibTorchsStepsFor200Steps) {
  expect_same_as_eager(OptimizerOptions().name("sgd").lr(0.05));
  expect_same_as_eager(OptimizerOptions().name("sgd").lr(0.05).momentum(0.9).nesterov(true).weight_decay(5e-4));
  expect_same_as_eager(OptimizerOptions().name("sgd").lr(0.05).momentum(0.9).dampening(0.1));
  expect_same_as_eager(OptimizerOptions().name("decoupled_sgdw").lr(0.05).momentum(0.9).weight_decay(5e-4));
  expect_same_as_eager(OptimizerOptions().name("adam").lr(1e-3).weight_decay(0.01));
  expect_same_as_eager(OptimizerOptions().name("adamw").lr(1e-3).beta2(0.99).weight_decay(0.1));
}

TEST(CapturableStep, SaysWhyAnOptimizerHasNone) {
  auto w = torch::ones({2}, torch::requires_grad());
  w.mutable_grad() = torch::ones({2});
  auto rmsprop = std::make_shared<torch::optim::RMSprop>(std::vector<at::Tensor>{w});
  EXPECT_THAT([&] { CapturableStep step(rmsprop); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("not one of sgd, decoupled_sgdw")));
  auto amsgrad =
      std::make_shared<torch::optim::Adam>(std::vector<at::Tensor>{w}, torch::optim::AdamOptions().amsgrad(true));
  EXPECT_THAT([&] { CapturableStep step(amsgrad); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("amsgrad")));
  auto adam = make_optimizer(OptimizerOptions().name("adam"), {w});
  EXPECT_THAT([&] { CapturableStep step(adam); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("has not taken an eager step")));
}

}  // namespace
}  // namespace baton
