// What augment_test.cpp, one_shot_test.cpp, registry_test.cpp, surgery_test.cpp and weights_test.cpp share.
#pragma once

#include "baton/algorithms/algorithms.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include <ATen/autocast_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

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

namespace baton::algorithms_fixtures {

using ::testing::HasSubstr;
using testing::Probe;
using testing::quadrants;

inline TrainerOptions image_options(const std::string& model_name = "fashion_cnn", int64_t n = 64, int64_t batch = 16) {
  torch::manual_seed(0);
  auto model = make_model(model_name, ModelOptions().input_shape({1, 16, 16}).num_classes(4));
  return TrainerOptions()
      .model(model)
      .train_dataloader(std::make_shared<DataLoader>(quadrants(n, 1), DataLoaderOptions().batch_size(batch).seed(3)))
      .eval_dataloader(
          "eval", std::make_shared<DataLoader>(quadrants(32, 2), DataLoaderOptions().batch_size(16).shuffle(false)))
      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.05).momentum(0.9), model->parameters())})
      .progress_bar(false)
      .console_log_interval("0ba")
      .eval_interval("0ep");
}

// A State with a model and a batch, for calling apply() directly.
struct Bench {
  // ImageNet's ResNets shrink an image 32 times: 64x64 leaves them 2x2 at the end.
  explicit Bench(const std::string& model_name = "fashion_cnn") {
    const int64_t side = model_name == "resnet18" || model_name == "resnet50" ? 64 : 16;
    torch::manual_seed(0);
    auto spec = ModelOptions().input_shape({1, side, side}).num_classes(4);
    if (model_name == "cnn_space") {  // a model space: an architecture with every kind of convolution
      spec.arch({{"stage1_op", "dwsep3x3"},
                 {"stage1_width", 16},
                 {"stage1_depth", 2},
                 {"stage2_op", "conv5x5"},
                 {"stage2_width", 32},
                 {"stage2_depth", 1},
                 {"stage3_op", "conv3x3"},
                 {"stage3_width", 16},
                 {"stage3_depth", 1}});
    }
    model = make_model(model_name, spec);
    state.model = model;
    state.max_duration = Time::from_batch(10);
    state.batch = {torch::randn({8, 1, side, side}), torch::randint(0, 4, {8})};
  }
  std::shared_ptr<Model> model;
  State state;
  Logger logger{state};
};

}  // namespace baton::algorithms_fixtures
