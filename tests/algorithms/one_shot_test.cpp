// Single-path one-shot training (src/algorithms/one_shot.cpp).
#include "baton/algorithms/algorithms.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include <ATen/autocast_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "algorithms/algorithms_fixtures.h"
#include "baton/algorithms/registry.h"
#include "baton/core/grad_scaler.h"
#include "baton/core/logger.h"
#include "baton/core/state.h"
#include "baton/models/surgery.h"
#include "baton/models/zoo.h"
#include "baton/nas/space.h"
#include "baton/optim/optimizers.h"
#include "baton/train/one_shot.h"
#include "baton/train/trainer.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton {
namespace {

using namespace algorithms_fixtures;  // NOLINT(google-build-using-namespace)

using ::testing::HasSubstr;
using testing::Probe;
using testing::quadrants;

// One-shot search: the supernet trains a path per batch; a path's evaluation inherits its weights.
TEST(SinglePath, TrainsThePathOfEachBatchAndEvaluatePathInheritsTheWeights) {
  torch::manual_seed(0);
  const nlohmann::json widths = {{"stage1_width", 16}, {"stage2_width", 16}, {"stage3_width", 16}};
  auto model =
      make_model("cnn_space", ModelOptions().input_shape({1, 16, 16}).num_classes(4).one_shot(true).arch(widths));
  nas::SupernetImpl* supernet = nas::find_supernet(*model);
  ASSERT_NE(supernet, nullptr);
  std::vector<nlohmann::json> paths;
  auto probe = std::make_shared<Probe>([&](Event e, State& s) {
    if (e == Event::kBeforeForward) paths.push_back(nas::find_supernet(*s.model)->active());
  });
  TrainerOptions options = image_options();
  options.model(model)
      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.05).momentum(0.9), model->parameters())})
      .algorithms({make_algorithm("single_path", {{"sampling", "fair"}, {"seed", 5}})})
      .callbacks({probe})
      .max_duration("10ba");
  Trainer trainer(options);
  trainer.fit();
  ASSERT_EQ(paths.size(), 10U);
  std::set<std::string> ops;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    EXPECT_EQ(paths[i], supernet->sample(5, static_cast<int64_t>(i), true)) << i;
    if (i < 5) ops.insert(paths[i]["stage2_op"].get<std::string>());
  }
  EXPECT_EQ(ops.size(), 5U);  // fair: the first 5 batches take each of the 5 ops once

  std::shared_ptr<torch::nn::BatchNorm2dImpl> stem_norm;  // on every path
  for (const auto& m : model->modules()) {
    if (!stem_norm) stem_norm = std::dynamic_pointer_cast<torch::nn::BatchNorm2dImpl>(m);
  }
  ASSERT_TRUE(stem_norm);
  const auto a = evaluate_path(trainer, paths[3], 2);
  EXPECT_EQ(stem_norm->num_batches_tracked.item<int64_t>(), 2);  // statistics of 2 batches, anew
  ASSERT_EQ(a.count("eval/accuracy"), 1U);
  (void)evaluate_path(trainer, paths[4], 3);
  EXPECT_EQ(evaluate_path(trainer, paths[3], 2), a);  // the same path, the same batches: the same metrics
  EXPECT_EQ(supernet->active(), paths[3]);
  EXPECT_THAT(testing::error_of([&] {
                evaluate_path(trainer, {{"stage1_op", "conv3x3"}}, 0);
              }),
              HasSubstr("the path has no value for"));
  EXPECT_THAT(testing::error_of([&] { Trainer plain(image_options().algorithms({make_algorithm("single_path")})); }),
              HasSubstr("single_path: the model holds no one-shot supernet"));
}

}  // namespace
}  // namespace baton
