// Trainer overhead: Trainer::fit against a hand-written LibTorch loop over the same model, data,
// batch size (128), optimizer (SGD, Nesterov) and threads (every core). The trainer runs with the
// progress bar, the console logger and 8 no-op algorithms on.
//
//   build/bin/trainer_bench [--steps 300] [--reps 3]
//       fashion_cnn on Fashion-MNIST (random data of its shape when the package is missing), on the
//       CPU: samples/s of each and their ratio.
//   build/bin/trainer_bench --host-time [--device cpu|cuda] [--steps 2000] [--reps 3]
//   (either with --no-prefetch: the trainer's data loader gathers each batch in line, as the loop)
//       the framework's host time per batch: a model so small (an MLP of 16 features, data on the
//       device) that a step is its kernel launches, so the trainer's time per batch less the loop's
//       is what the trainer itself does per batch, in microseconds. On CUDA also the trainer under
//       CUDA graphs (no-op algorithms outside the step only, as those inside it would block graphs).
//
// Runs alternate (loop, trainer, loop, trainer, …) so that both see the same machine; prints the
// median of each and a last line of JSON.
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

#include "baton/core/device.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kBatch = 128;

class NoOp : public baton::Algorithm {
 public:
  explicit NoOp(baton::Event event) : event_(event) {}
  bool match(baton::Event event, const baton::State&) override { return event == event_; }
  std::optional<int> apply(baton::Event, baton::State&, baton::Logger&) override { return std::nullopt; }

 private:
  baton::Event event_;
};

// What both sides train: a model of the zoo on a data set, on a device.
struct Workload {
  std::string model;
  std::vector<int64_t> input_shape;
  std::shared_ptr<baton::TensorDataset> data;
  c10::Device device = c10::Device(c10::kCPU);

  std::shared_ptr<baton::Model> make() const {
    torch::manual_seed(0);
    auto m = baton::make_model(model, baton::ModelOptions().input_shape(input_shape).num_classes(10).hidden({16}));
    m->to(device);
    return m;
  }
};

Workload fashion() {
  Workload w{"fashion_cnn", {1, 28, 28}, nullptr};
  if (std::filesystem::exists(baton::kFashionMnistDir)) {
    w.data = baton::load_fashion_mnist().first;
  } else {
    std::fprintf(stderr, "dataset-fashion-mnist is not installed: random data of its shape\n");
    w.data = std::make_shared<baton::TensorDataset>(torch::randn({60000, 1, 28, 28}), torch::randint(0, 10, {60000}));
  }
  return w;
}

Workload tiny(c10::Device device) {
  torch::manual_seed(0);
  auto x = torch::randn({16384, 16}).to(device);
  auto y = torch::randint(0, 10, {16384}).to(device);
  return {"mlp", {16}, std::make_shared<baton::TensorDataset>(x, y), device};
}

baton::OptimizerOptions sgd() {
  return baton::OptimizerOptions().name("sgd").lr(0.05).momentum(0.9).nesterov(true).weight_decay(5e-4);
}

// Seconds per step of the loop a user would write: a shuffled gather, zero_grad, forward, loss,
// backward, step; the device waited for once at the end.
double hand_written(const Workload& w, int64_t steps) {
  auto model = w.make();
  auto opt = baton::make_optimizer(sgd(), model->parameters());
  const auto& x = w.data->inputs();
  const auto& y = w.data->targets();
  const int64_t per_epoch = x.size(0) / kBatch;
  torch::Tensor perm = torch::randperm(x.size(0), torch::TensorOptions().device(w.device));
  baton::synchronize(w.device);
  const auto start = Clock::now();
  for (int64_t step = 0; step < steps; ++step) {
    if (step % per_epoch == 0) perm = torch::randperm(x.size(0), torch::TensorOptions().device(w.device));
    const auto idx = perm.slice(0, (step % per_epoch) * kBatch, (step % per_epoch + 1) * kBatch);
    baton::Batch batch{x.index_select(0, idx), y.index_select(0, idx)};
    opt->zero_grad();
    auto loss = model->loss(model->forward(batch), batch);
    loss.backward();
    opt->step();
  }
  baton::synchronize(w.device);
  return std::chrono::duration<double>(Clock::now() - start).count() / static_cast<double>(steps);
}

// Seconds per step of Trainer::fit (RunSummary::train_s: the steps, evaluation excluded).
std::pair<double, int64_t> trainer(const Workload& w, int64_t steps, baton::CudaGraphs graphs, bool prefetch) {
  auto model = w.make();
  std::vector<baton::Event> events{baton::Event::kBatchStart, baton::Event::kBatchEnd};
  if (graphs != baton::CudaGraphs::kOn) {
    events.insert(events.begin() + 1,
                  {baton::Event::kBeforeTrainBatch, baton::Event::kBeforeForward, baton::Event::kAfterForward,
                   baton::Event::kBeforeLoss, baton::Event::kAfterLoss, baton::Event::kAfterBackward});
  }
  std::vector<std::shared_ptr<baton::Algorithm>> algorithms;
  for (baton::Event e : events) algorithms.push_back(std::make_shared<NoOp>(e));
  baton::Trainer t(baton::TrainerOptions()
                       .model(model)
                       .train_dataloader(std::make_shared<baton::DataLoader>(
                           w.data, baton::DataLoaderOptions().batch_size(kBatch).drop_last(true).prefetch(prefetch)))
                       .max_duration(baton::Time::from_batch(steps))
                       .eval_interval("0ep")
                       .device(w.device.str())
                       .cuda_graphs(graphs)
                       .optimizers({baton::make_optimizer(sgd(), model->parameters())})
                       .algorithms(algorithms)
                       .loggers({std::make_shared<baton::ConsoleLogger>(baton::Time::from_epoch(1))})
                       .progress_bar(true));
  t.fit();
  return {t.summary().train_s / static_cast<double>(t.summary().steps), t.summary().graph_steps};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Flags {
  int64_t steps = 0;
  int reps = 3;
  bool host_time = false;
  std::string device = "cpu";
  bool prefetch = true;
};

int overhead(const Flags& f) {
  const auto w = fashion();
  hand_written(w, 20);  // warm-up: oneDNN primitives, allocator
  std::vector<double> loop;
  std::vector<double> fit;
  for (int r = 0; r < f.reps; ++r) {
    loop.push_back(kBatch / hand_written(w, f.steps));
    fit.push_back(kBatch / trainer(w, f.steps, baton::CudaGraphs::kOff, f.prefetch).first);
    std::printf("rep %d: hand-written loop %.0f samples/s, Trainer::fit %.0f samples/s\n", r + 1, loop.back(),
                fit.back());
  }
  const double ratio = median(fit) / median(loop);
  std::printf("median: hand-written loop %.0f samples/s, Trainer::fit %.0f samples/s, ratio %.3f\n", median(loop),
              median(fit), ratio);
  std::printf("%s\n", nlohmann::json{{"steps", f.steps},
                                     {"reps", f.reps},
                                     {"loop_samples_per_s", median(loop)},
                                     {"trainer_samples_per_s", median(fit)},
                                     {"ratio", ratio}}
                          .dump()
                          .c_str());
  return 0;
}

int host_time(const Flags& f) {
  const auto w = tiny(baton::parse_device(f.device));  // "cuda": cuda:0, as a recipe's
  const bool cuda = w.device.is_cuda();
  hand_written(w, 200);
  std::vector<double> loop;
  std::vector<double> fit;
  std::vector<double> graph;
  int64_t replayed = 0;
  for (int r = 0; r < f.reps; ++r) {
    loop.push_back(1e6 * hand_written(w, f.steps));
    fit.push_back(1e6 * trainer(w, f.steps, baton::CudaGraphs::kOff, f.prefetch).first);
    std::printf("rep %d: hand-written loop %.1f us/batch, Trainer::fit %.1f us/batch", r + 1, loop.back(), fit.back());
    if (cuda) {
      const auto [s, g] = trainer(w, f.steps, baton::CudaGraphs::kOn, f.prefetch);
      graph.push_back(1e6 * s);
      replayed = g;
      std::printf(", Trainer::fit under CUDA graphs %.1f us/batch (%lld steps replayed)", graph.back(),
                  static_cast<long long>(g));
    }
    std::printf("\n");
  }
  const double framework = median(fit) - median(loop);
  std::printf(
      "median on %s: hand-written loop %.1f us/batch, Trainer::fit %.1f us/batch: the framework's host time "
      "%.1f us per batch\n",
      baton::describe(w.device).c_str(), median(loop), median(fit), framework);
  nlohmann::json row{{"device", baton::describe(w.device)},
                     {"steps", f.steps},
                     {"reps", f.reps},
                     {"loop_us_per_batch", median(loop)},
                     {"trainer_us_per_batch", median(fit)},
                     {"framework_us_per_batch", framework}};
  if (cuda) {
    std::printf("under CUDA graphs: %.1f us/batch, %lld of %lld steps replayed\n", median(graph),
                static_cast<long long>(replayed), static_cast<long long>(f.steps));
    row["graph_trainer_us_per_batch"] = median(graph);
    row["graph_steps"] = replayed;
  }
  std::printf("%s\n", row.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--host-time") {
      f.host_time = true;
    } else if (flag == "--no-prefetch") {
      f.prefetch = false;
    } else if (flag == "--steps" && has_value) {
      f.steps = std::atoll(argv[++i]);
    } else if (flag == "--reps" && has_value) {
      f.reps = std::atoi(argv[++i]);
    } else if (flag == "--device" && has_value) {
      f.device = argv[++i];
    } else {
      std::fprintf(stderr,
                   "trainer_bench: unknown flag %s (expected --steps N, --reps N, --host-time, --device cpu|cuda, "
                   "--no-prefetch)\n",
                   flag.c_str());
      return 2;
    }
  }
  if (f.steps <= 0) f.steps = f.host_time ? 2000 : 300;
  if (f.reps <= 0) f.reps = 1;
  if (f.device != "cpu" && baton::cuda_device_count() == 0) {
    std::fprintf(stderr, "trainer_bench: --device %s: this machine has no CUDA device\n", f.device.c_str());
    return 77;
  }
  baton::configure_threads(0);  // the same threads for both: every core, one OpenBLAS thread
  return f.host_time ? host_time(f) : overhead(f);
}
