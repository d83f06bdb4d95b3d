// What a training step holds, and what it costs to hold less: a gpt step at context 1024 with its
// blocks' activations kept (plain) and recomputed in backward (activation_checkpointing: auto). Each
// configuration runs in a child process of its own: once the model and the batch are made, the
// process's peak resident set is reset (/proc/self/clear_refs), and the steps' peak is its high-water
// mark above the resident set then (the optimizer's state included: the same in both); the time is a
// step's after a warm-up step. Prints one JSON line per
// configuration and the ratios against plain.
//
//   build/bin/memory_bench [--device cpu|cuda] [--context 1024] [--batch 4] [--layers 4] [--width 256]
//                          [--steps 3] [--reps 1]
//
// On a GPU the peak is the allocator's (above what it held before the steps), not the resident set.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/core/device.h"
#include "baton/models/checkpointing.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  int64_t context = 1024, batch = 4, layers = 4, width = 256, steps = 3, vocab = 256, reps = 1;
  std::string device = "cpu";
};

// A field of /proc/self/status in bytes ("VmHWM:   123456 kB").
int64_t status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  return 0;
}

void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

nlohmann::json measure(const Config& c, bool checkpointing) {
  torch::set_num_threads(static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
  torch::manual_seed(0);
  auto model = baton::make_model("gpt", baton::ModelOptions()
                                            .input_shape({c.context})
                                            .num_classes(c.vocab)
                                            .layers(c.layers)
                                            .width(c.width)
                                            .heads(c.width / 64));
  if (checkpointing) baton::checkpoint_activations(*model, {"auto"});
  const c10::Device device(c.device);
  model->to(device);
  auto optimizer = baton::make_optimizer(baton::OptimizerOptions().name("adamw").lr(1e-3), model->parameters());
  const baton::Batch batch{torch::randint(0, c.vocab, {c.batch, c.context}).to(device),
                           torch::randint(0, c.vocab, {c.batch, c.context}).to(device)};
  model->train();
  const auto step = [&] {
    optimizer->zero_grad();
    model->loss(model->forward(batch), batch).backward();
    optimizer->step();
  };
  // A GPU: the allocator's peak above what it held before the steps; a CPU: the resident set's.
  const auto gpu = baton::device_memory(device);
  reset_peak();
  baton::reset_peak_memory(device);
  const int64_t before = gpu ? gpu->allocated : status_bytes("VmRSS");  // the model and the batch
  step();                                                               // warm-up: the optimizer's state made
  baton::synchronize(device);
  const auto start = Clock::now();
  for (int64_t s = 0; s < c.steps; ++s) step();
  baton::synchronize(device);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count() / static_cast<double>(c.steps);
  const auto after = baton::device_memory(device);
  return {{"activation_checkpointing", checkpointing},
          {"device", c.device},
          {"step_s", seconds},
          {"steps_peak_bytes", (after ? after->peak : status_bytes("VmHWM")) - before},
          {"peak_rss_bytes", status_bytes("VmHWM")}};
}

// measure() in a child process: its own peak, nothing of the other configuration's.
nlohmann::json in_child(const Config& c, bool checkpointing) {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const std::string line = measure(c, checkpointing).dump();
    if (::write(fds[1], line.data(), line.size()) < 0) std::_Exit(1);
    std::_Exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.empty()) {
    std::fprintf(stderr, "memory_bench: the child measuring %s failed\n", checkpointing ? "checkpointing" : "plain");
    std::exit(1);
  }
  return nlohmann::json::parse(out);
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t value = std::atoll(argv[i + 1]);
    if (flag == "--device") {
      c.device = argv[i + 1];
    } else if (flag == "--context") {
      c.context = value;
    } else if (flag == "--batch") {
      c.batch = value;
    } else if (flag == "--layers") {
      c.layers = value;
    } else if (flag == "--width") {
      c.width = value;
    } else if (flag == "--steps") {
      c.steps = value;
    } else if (flag == "--reps") {
      c.reps = std::max<int64_t>(1, value);
    } else {
      std::fprintf(stderr, "memory_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  std::printf(
      "gpt on %s: context %lld, batch %lld, %lld layers of width %lld, vocabulary %lld, fp32, AdamW, %lld steps\n",
      c.device.c_str(), static_cast<long long>(c.context), static_cast<long long>(c.batch),
      static_cast<long long>(c.layers), static_cast<long long>(c.width), static_cast<long long>(c.vocab),
      static_cast<long long>(c.steps));
  // The two alternate, `reps` times each: a shared machine's slow minute falls on both.
  std::vector<double> memory, time;
  for (int64_t r = 0; r < c.reps; ++r) {
    const nlohmann::json plain = in_child(c, false), recomputed = in_child(c, true);
    std::printf("%s\n%s\n", plain.dump().c_str(), recomputed.dump().c_str());
    memory.push_back(recomputed["steps_peak_bytes"].get<double>() / plain["steps_peak_bytes"].get<double>());
    time.push_back(recomputed["step_s"].get<double>() / plain["step_s"].get<double>());
  }
  std::sort(memory.begin(), memory.end());
  std::sort(time.begin(), time.end());
  std::printf("activation checkpointing / plain, median of %lld: peak memory of the steps %.3f, step time %.3f\n",
              static_cast<long long>(c.reps), memory[memory.size() / 2], time[time.size() / 2]);
  return 0;
}
