// The cost of resuming in the middle of an epoch: from a checkpoint at batch 0 and one at batch 400
// of Fashion-MNIST's first epoch (batch 128), the time from constructing the Trainer (which loads
// the checkpoint) to the end of the first batch after it. A loader that replays the epoch to get
// back to batch 400 (Composer's, its issue #1090) pays for 400 batches; baton's position is
// restored in O(1).
//
//   build/bin/resume_bench [--reps 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/data/fashion_mnist.h"
#include "baton/io/file.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"

namespace {

using Clock = std::chrono::steady_clock;

baton::TrainerOptions options(const std::shared_ptr<baton::TensorDataset>& data) {
  torch::manual_seed(0);
  auto model = baton::make_model("fashion_cnn", baton::ModelOptions().input_shape({1, 28, 28}).num_classes(10));
  return baton::TrainerOptions()
      .model(model)
      .train_dataloader(
          std::make_shared<baton::DataLoader>(data, baton::DataLoaderOptions().batch_size(128).drop_last(true)))
      .optimizers(
          {baton::make_optimizer(baton::OptimizerOptions().name("sgd").lr(0.05).momentum(0.9), model->parameters())})
      .eval_interval("0ep")
      .progress_bar(false)
      .console_log_interval("0ep");
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  if (argc == 3 && std::string(argv[1]) == "--reps") reps = std::atoi(argv[2]);
  std::shared_ptr<baton::TensorDataset> data;
  if (std::filesystem::exists(baton::kFashionMnistDir)) {
    data = baton::load_fashion_mnist().first;
  } else {
    data = std::make_shared<baton::TensorDataset>(torch::randn({60000, 1, 28, 28}), torch::randint(0, 10, {60000}));
  }
  const std::string dir = std::filesystem::temp_directory_path() / ("baton_resume_bench_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  // Checkpoints at batch 0 (a fresh run's state) and at batch 400 of epoch 0.
  {
    baton::Trainer at0(options(data).max_duration("1ba"));
    at0.save_checkpoint(dir + "/ba0.ckpt");
    baton::Trainer at400(options(data).max_duration("400ba"));
    at400.fit();
    at400.save_checkpoint(dir + "/ba400.ckpt");
  }
  auto resume = [&](const std::string& file, int64_t start) {
    const auto t0 = Clock::now();
    baton::Trainer t(options(data).max_duration(baton::Time::from_batch(start + 1)).load_path(dir + "/" + file));
    t.fit();
    if (t.state().timestamp.batch() != start + 1) std::abort();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  std::vector<double> at0;
  std::vector<double> at400;
  for (int r = 0; r < reps; ++r) {
    at0.push_back(resume("ba0.ckpt", 0));
    at400.push_back(resume("ba400.ckpt", 400));
    std::printf("rep %d: resume at batch 0 %.3f s, at batch 400 %.3f s\n", r + 1, at0.back(), at400.back());
  }
  std::sort(at0.begin(), at0.end());
  std::sort(at400.begin(), at400.end());
  const double m0 = at0[at0.size() / 2];
  const double m400 = at400[at400.size() / 2];
  std::printf("median: resume at batch 0 %.3f s, at batch 400 %.3f s, difference %.3f s (goal < 1 s)\n", m0, m400,
              m400 - m0);
  std::printf(
      "%s\n",
      nlohmann::json{{"resume_at_0_s", m0}, {"resume_at_400_s", m400}, {"difference_s", m400 - m0}}.dump().c_str());
  baton::remove_tree(dir);
}
