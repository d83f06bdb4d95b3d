// Trainer overhead: Trainer::fit against a hand-written LibTorch loop over the same model
// (fashion_cnn), data (Fashion-MNIST, or random data of its shape when the package is missing),
// batch size (128), optimizer (SGD, Nesterov) and threads (every core). The trainer runs with the
// progress bar, the console logger and 8 no-op algorithms on.
//
//   build/bin/trainer_bench [--steps 200] [--reps 3]
//
// Runs alternate (loop, trainer, loop, trainer, …) so that both see the same machine; prints the
// median samples/s of each and their ratio, and a last line of JSON.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/data/fashion_mnist.h"
#include "baton/loggers/progress_bar.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/threads.h"
#include "baton/train/trainer.h"

namespace {

using Clock = std::chrono::steady_clock;

class NoOp : public baton::Algorithm {
 public:
  explicit NoOp(baton::Event event) : event_(event) {}
  bool match(baton::Event event, const baton::State&) override { return event == event_; }
  std::optional<int> apply(baton::Event, baton::State&, baton::Logger&) override { return std::nullopt; }

 private:
  baton::Event event_;
};

std::shared_ptr<baton::TensorDataset> training_data() {
  if (std::filesystem::exists(baton::kFashionMnistDir)) return baton::load_fashion_mnist().first;
  std::fprintf(stderr, "dataset-fashion-mnist is not installed: random data of its shape\n");
  return std::make_shared<baton::TensorDataset>(torch::randn({60000, 1, 28, 28}), torch::randint(0, 10, {60000}));
}

baton::OptimizerOptions sgd() {
  return baton::OptimizerOptions().name("sgd").lr(0.05).momentum(0.9).nesterov(true).weight_decay(5e-4);
}

double hand_written(const std::shared_ptr<baton::TensorDataset>& data, int64_t steps) {
  torch::manual_seed(0);
  auto model = baton::make_model("fashion_cnn", baton::ModelOptions().input_shape({1, 28, 28}).num_classes(10));
  auto opt = baton::make_optimizer(sgd(), model->parameters());
  const auto& x = data->inputs();
  const auto& y = data->targets();
  const int64_t per_epoch = x.size(0) / 128;
  torch::Tensor perm = torch::randperm(x.size(0));
  const auto start = Clock::now();
  for (int64_t step = 0; step < steps; ++step) {
    if (step % per_epoch == 0) perm = torch::randperm(x.size(0));
    const auto idx = perm.slice(0, (step % per_epoch) * 128, (step % per_epoch + 1) * 128);
    baton::Batch batch{x.index_select(0, idx), y.index_select(0, idx)};
    opt->zero_grad();
    auto loss = model->loss(model->forward(batch), batch);
    loss.backward();
    opt->step();
  }
  return static_cast<double>(steps * 128) / std::chrono::duration<double>(Clock::now() - start).count();
}

double trainer(const std::shared_ptr<baton::TensorDataset>& data, int64_t steps) {
  torch::manual_seed(0);
  auto model = baton::make_model("fashion_cnn", baton::ModelOptions().input_shape({1, 28, 28}).num_classes(10));
  std::vector<std::shared_ptr<baton::Algorithm>> algorithms;
  for (baton::Event e : {baton::Event::kBatchStart, baton::Event::kBeforeTrainBatch, baton::Event::kBeforeForward,
                         baton::Event::kAfterForward, baton::Event::kBeforeLoss, baton::Event::kAfterLoss,
                         baton::Event::kAfterBackward, baton::Event::kBatchEnd}) {
    algorithms.push_back(std::make_shared<NoOp>(e));
  }
  baton::Trainer t(baton::TrainerOptions()
                       .model(model)
                       .train_dataloader(std::make_shared<baton::DataLoader>(
                           data, baton::DataLoaderOptions().batch_size(128).drop_last(true)))
                       .max_duration(baton::Time::from_batch(steps))
                       .eval_interval("0ep")
                       .optimizers({baton::make_optimizer(sgd(), model->parameters())})
                       .algorithms(algorithms)
                       .loggers({std::make_shared<baton::ConsoleLogger>(baton::Time::from_epoch(1))})
                       .progress_bar(true));
  t.fit();
  return t.summary().samples_per_s();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 200;
  int reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--steps")
      steps = std::atoll(argv[i + 1]);
    else if (flag == "--reps")
      reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "trainer_bench: unknown flag %s (expected --steps N, --reps N)\n", flag.c_str());
      return 2;
    }
  }
  const auto data = training_data();
  baton::configure_threads(0);  // the same threads for both: every core, one OpenBLAS thread
  hand_written(data, 20);       // warm-up: oneDNN primitives, allocator
  std::vector<double> loop;
  std::vector<double> fit;
  for (int r = 0; r < reps; ++r) {
    loop.push_back(hand_written(data, steps));
    fit.push_back(trainer(data, steps));
    std::printf("rep %d: hand-written loop %.0f samples/s, Trainer::fit %.0f samples/s\n", r + 1, loop.back(),
                fit.back());
  }
  const double ratio = median(fit) / median(loop);
  std::printf("median: hand-written loop %.0f samples/s, Trainer::fit %.0f samples/s, ratio %.3f\n", median(loop),
              median(fit), ratio);
  std::printf("%s\n", nlohmann::json{{"steps", steps},
                                     {"reps", reps},
                                     {"loop_samples_per_s", median(loop)},
                                     {"trainer_samples_per_s", median(fit)},
                                     {"ratio", ratio}}
                          .dump()
                          .c_str());
}
