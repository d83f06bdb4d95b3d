// Data parallelism on MPI: training throughput and gradient reduction, one JSON line per case
// (printed by rank 0).
//
//   build/bin/ddp_bench --threads 2                          one process, 2 LibTorch threads
//   mpirun -np 2 build/bin/ddp_bench --threads 1             2 ranks x 1 thread, same global batch
//   mpirun -np 2 build/bin/ddp_bench --threads 1 --overlap 0 reduce every bucket after backward
//   mpirun -np 2 build/bin/ddp_bench --allreduce             MPI allreduce time vs size
//
// bench/ddp_bench.sh runs them side by side and prints the ratios. The model is fashion_cnn on
// Fashion-MNIST-shaped random data (the speed does not depend on the values), batch 128.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/threads.h"
#include "baton/train/trainer.h"
#include "mpi/comm.h"

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int allreduce_table(int repeat) {
  auto& comm = baton::mpi::Comm::world();
  for (int64_t bytes = 4 << 10; bytes <= (64 << 20); bytes *= 4) {
    std::vector<float> data(static_cast<std::size_t>(bytes / 4), 1.0F);
    comm.allreduce_sum(data.data(), data.size());  // warm-up
    comm.barrier();
    const int n = bytes >= (16 << 20) ? std::max(3, repeat / 10) : repeat;
    const double t0 = now_s();
    for (int i = 0; i < n; ++i) comm.allreduce_sum(data.data(), data.size());
    const double per = (now_s() - t0) / n;
    if (comm.rank() == 0) {
      nlohmann::json out = {{"case", "allreduce"},
                            {"ranks", comm.size()},
                            {"bytes", bytes},
                            {"us", per * 1e6},
                            {"GB_per_s", static_cast<double>(bytes) / per / 1e9}};
      std::printf("%s\n", out.dump().c_str());
    }
  }
  return 0;
}

}  // namespace

int run(int argc, char** argv) {
  int threads = 1, steps = 200, overlap = 1, repeat = 50;
  double bucket_mb = 1.0;
  bool allreduce = false;
  std::string precision = "auto";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    try {
      if (a == "--threads")
        threads = std::stoi(value());
      else if (a == "--steps")
        steps = std::stoi(value());
      else if (a == "--overlap")
        overlap = std::stoi(value());
      else if (a == "--bucket-mb")
        bucket_mb = std::stod(value());
      else if (a == "--precision")
        precision = value();
      else if (a == "--allreduce")
        allreduce = true;
      else if (a == "--repeat")
        repeat = std::stoi(value());
      else {
        std::fprintf(stderr,
                     "usage: ddp_bench [--threads T] [--steps N] [--overlap 0|1] [--bucket-mb X] "
                     "[--precision auto|fp32|amp_bf16] | --allreduce [--repeat R]\n");
        return 2;
      }
    } catch (const std::logic_error&) {  // std::stoi/stod: not a number
      std::fprintf(stderr, "ddp_bench: %s: expected a number, got '%s'\n", a.c_str(), argv[i]);
      return 2;
    }
  }
  if (allreduce) return allreduce_table(repeat);

  const int64_t batch = 128, examples = batch * 50;
  torch::manual_seed(0);
  auto data = std::make_shared<baton::TensorDataset>(torch::randn({examples, 1, 28, 28}),
                                                     torch::randint(0, 10, {examples}, torch::kLong));
  auto model = baton::make_model("fashion_cnn", baton::ModelOptions().input_shape({1, 28, 28}).num_classes(10));
  const auto prec = precision == "auto"
                        ? (baton::cpu_has_native_bf16() ? baton::Precision::kAmpBf16 : baton::Precision::kFp32)
                        : baton::parse_precision(precision);
  auto options =
      baton::TrainerOptions()
          .model(model)
          .train_dataloader(std::make_shared<baton::DataLoader>(data, baton::DataLoaderOptions().batch_size(batch)))
          .optimizers({baton::make_optimizer(baton::OptimizerOptions().name("sgd").lr(0.01).momentum(0.9),
                                             model->parameters())})
          .max_duration(baton::Time::from_batch(10))
          .eval_interval("0ba")
          .precision(prec)
          .num_threads(threads)
          .ddp_bucket_mb(bucket_mb)
          .ddp_overlap(overlap != 0)
          .progress_bar(false)
          .console_log_interval("0ba");
  baton::Trainer trainer(options);
  trainer.fit();  // 10 warm-up batches
  const double wait0 = trainer.ddp_wait_seconds();
  const double t0 = now_s();
  trainer.fit(baton::Time::from_batch(10 + steps));
  const double dt = now_s() - t0;
  if (trainer.rank() == 0) {
    int64_t params = 0;
    for (const auto& p : model->parameters()) params += p.numel();
    nlohmann::json out = {{"case", "train"},
                          {"ranks", trainer.world_size()},
                          {"threads", threads},
                          {"precision", std::string(baton::to_string(prec))},
                          {"overlap", overlap != 0},
                          {"bucket_mb", bucket_mb},
                          {"gradient_mb", static_cast<double>(params) * 4 / (1 << 20)},
                          {"steps", steps},
                          {"samples_per_s", static_cast<double>(steps * batch) / dt},
                          {"ms_per_step", dt / steps * 1e3},
                          {"reduce_wait_ms_per_step", (trainer.ddp_wait_seconds() - wait0) / steps * 1e3}};
    std::printf("%s\n", out.dump().c_str());
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::invalid_argument& e) {  // a bad option value
    std::fprintf(stderr, "ddp_bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddp_bench: %s\n", e.what());
    return 1;
  }
}
