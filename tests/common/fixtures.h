// Small, fast data sets and training set-ups shared by the tests.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "baton/core/callback.h"
#include "baton/data/dataset.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"

namespace baton::testing {

// A data set that counts its gathers (each one a batch read and prepared) over another one.
class CountedGathers : public Dataset {
 public:
  explicit CountedGathers(std::shared_ptr<Dataset> data) : data_(std::move(data)) {}
  int64_t size() const override { return data_->size(); }
  Batch get_batch(const at::Tensor& indices) const override {
    ++gathers;
    return data_->get_batch(indices);
  }
  std::vector<int64_t> input_shape() const override { return data_->input_shape(); }
  int64_t num_classes() const override { return data_->num_classes(); }
  mutable std::atomic<int64_t> gathers{0};

 private:
  std::shared_ptr<Dataset> data_;
};

// Four well-separated classes in 8 features.
inline std::shared_ptr<TensorDataset> blobs(int64_t n, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto labels = torch::randint(0, 4, {n}, gen, torch::kLong);
  auto centers = torch::eye(4, 8) * 4.0;
  auto x = centers.index_select(0, labels) + torch::randn({n, 8}, gen);
  return std::make_shared<TensorDataset>(x, labels);
}

// Four classes of 1x16x16 images: class k is brighter in quadrant k.
inline std::shared_ptr<TensorDataset> quadrants(int64_t n, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  const at::Tensor labels = torch::randint(0, 4, {n}, gen, torch::kLong);
  at::Tensor x = torch::randn({n, 1, 16, 16}, gen) * 0.5;
  const at::Tensor half = torch::arange(16).div(8, "floor");  // which half a row or column is in
  const at::Tensor k = labels.view({n, 1, 1});
  const at::Tensor in_quadrant =
      (half.view({1, 16, 1}) == k.div(2, "floor")) & (half.view({1, 1, 16}) == k.remainder(2));
  x.add_(in_quadrant.unsqueeze(1).to(torch::kFloat) * 1.5);
  return std::make_shared<TensorDataset>(x, labels);
}

// Calls `f` on every event.
class Probe : public Callback {
 public:
  explicit Probe(std::function<void(Event, State&)> f) : f_(std::move(f)) {}
  void run_event(Event event, State& state, Logger&) override { f_(event, state); }

 private:
  std::function<void(Event, State&)> f_;
};

// An MLP on blobs: `n` examples in batches of `batch`, SGD with `momentum`, no console output.
inline TrainerOptions small_options(int64_t n = 64, int64_t batch = 16, double momentum = 0.0) {
  auto model = make_model("mlp", ModelOptions().input_shape({8}).num_classes(4).hidden({16}));
  return TrainerOptions()
      .model(model)
      .train_dataloader(std::make_shared<DataLoader>(blobs(n, 1), DataLoaderOptions().batch_size(batch).seed(3)))
      .eval_dataloader("eval",
                       std::make_shared<DataLoader>(blobs(32, 2), DataLoaderOptions().batch_size(16).shuffle(false)))
      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.1).momentum(momentum), model->parameters())})
      .progress_bar(false)
      .console_log_interval("0ba");
}

}  // namespace baton::testing
