// Small, fast training set-ups shared by the trainer's tests.
#pragma once

#include <memory>

#include <torch/torch.h>

#include "baton/data/dataset.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"

namespace baton::testing {

// Four well-separated classes in 8 features.
inline std::shared_ptr<TensorDataset> blobs(int64_t n, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto labels = torch::randint(0, 4, {n}, gen, torch::kLong);
  auto centers = torch::eye(4, 8) * 4.0;
  auto x = centers.index_select(0, labels) + torch::randn({n, 8}, gen);
  return std::make_shared<TensorDataset>(x, labels);
}

// An MLP on blobs: `n` examples in batches of `batch`, SGD with `momentum`, no console output.
inline TrainerOptions small_options(int64_t n = 64, int64_t batch = 16, double momentum = 0.0) {
  auto model = make_model("mlp", {.input_shape = {8}, .num_classes = 4, .hidden = {16}});
  return TrainerOptions()
      .model(model)
      .train_dataloader(std::make_shared<DataLoader>(blobs(n, 1), DataLoaderOptions().batch_size(batch).seed(3)))
      .eval_dataloader("eval",
                       std::make_shared<DataLoader>(blobs(32, 2), DataLoaderOptions().batch_size(16).shuffle(false)))
      .optimizers({make_optimizer({.name = "sgd", .lr = 0.1, .momentum = momentum}, model->parameters())})
      .progress_bar(false)
      .console_log_interval("0ba");
}

}  // namespace baton::testing
