// Callbacks that watch a run and log what they see: speed, learning rates, optimizer norms,
// memory, NaNs, time left; and two small utilities (free_outputs, LambdaCallback).
//
//   TrainerOptions().callbacks({std::make_shared<baton::SpeedMonitor>(), std::make_shared<baton::LrMonitor>()});
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "baton/core/callback.h"
#include "baton/core/device.h"
#include "baton/core/options.h"

namespace baton {

// Logs throughput over the last `window_size` batches (throughput/samples_per_sec,
// throughput/batches_per_sec, and throughput/tokens_per_sec when the inputs are windows of token
// indices), the wall-clock time of each epoch (wall_clock/epoch_s) and, from
// the model's multiply-adds per example (counted once, on the first batch, by tracing the
// model), throughput/flops_per_sec (2 FLOPs per multiply-add, forward and backward ~ 3x forward).
// A batch's time is the device's (DeviceMarker): on a GPU, from when the device reached the
// batch's start to when it finished its work, asked without waiting, so the figures come a few
// batches late (each logged at the step of the batch it measures) and stay true while the host
// queues ahead.
class SpeedMonitorOptions {
  BATON_ARG(int64_t, window_size) = 100;  // batches the rolling figures average over; at least 1
};

class SpeedMonitor : public Callback {
 public:
  ~SpeedMonitor() override;
  explicit SpeedMonitor(SpeedMonitorOptions options = {});
  void fit_start(State& state, Logger& logger) override;
  void epoch_start(State& state, Logger& logger) override;
  void batch_start(State& state, Logger& logger) override;
  void batch_end(State& state, Logger& logger) override;
  void epoch_end(State& state, Logger& logger) override;
  // Multiply-adds of one example's forward; 0 until counted (or when the model cannot be traced).
  double multiply_adds() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct InFlight {
    DeviceMarker start;
    std::optional<DeviceMarker> end;
    int64_t samples = 0;
    int64_t step = 0;
  };
  void measure(const InFlight& batch, Logger& logger);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Logs each optimizer parameter group's learning rate (lr-optimizer/group<i>) every batch, as the
// schedulers set it for the batch, at the step of the batch's loss.
class LrMonitor : public Callback {
 public:
  void before_train_batch(State& state, Logger& logger) override;
};

// Logs the L2 norms of the gradients and parameters (optimizer/grad_l2_norm,
// optimizer/param_l2_norm) after each backward, and per layer with `per_layer`
// (optimizer/grad_l2_norm/<parameter name>).
class OptimizerMonitor : public Callback {
 public:
  static constexpr bool kDefaultPerLayer = false;
  explicit OptimizerMonitor(bool per_layer = kDefaultPerLayer) : per_layer_(per_layer) {}
  void after_train_batch(State& state, Logger& logger) override;
  // It reads the weights before the optimizer's step; a replayed step has already taken it.
  std::string graph_blocker() const override {
    return "reads the weights before the optimizer step (after_train_batch), which a replayed step has already "
           "taken";
  }
  std::string sharding_blocker(Sharding sharding) const override {
    return sharding == Sharding::kGradients || sharding == Sharding::kFull
               ? "reads whole gradients (each rank holds its shards of them)"
               : "";
  }

 private:
  bool per_layer_;
};

// Logs the process's resident memory and its peak (memory/rss_mb, memory/peak_rss_mb) every
// `interval` batches; on a CUDA device also, per epoch, what LibTorch's allocator holds there
// (memory/cuda_allocated_mb, memory/cuda_reserved_mb, and memory/cuda_peak_mb: the most allocated
// during the epoch). Read from the allocator's counters: no wait for the device.
class MemoryMonitor : public Callback {
 public:
  static constexpr int64_t kDefaultInterval = 50;  // batches between readings
  explicit MemoryMonitor(int64_t interval = kDefaultInterval) : interval_(interval) {}
  void epoch_start(State& state, Logger& logger) override;
  void batch_end(State& state, Logger& logger) override;
  void epoch_end(State& state, Logger& logger) override;
  // From /proc/self/status (0 where there is none).
  static double rss_mb();
  static double peak_rss_mb();

 private:
  int64_t interval_;
};

// Stops training at the first NaN or Inf loss, before its backward can spoil the weights: throws
// std::runtime_error naming the batch and epoch; checkpoints already written stay as they are.
class NanMonitor : public Callback {
 public:
  void after_loss(State& state, Logger& logger) override;
  // Under CUDA graphs after_loss runs after the replayed step has changed the weights: the promise
  // above would not hold, so the run trains eager while it is on.
  std::string graph_blocker() const override {
    return "checks the loss before its backward (after_loss), which a replayed step has already applied";
  }
};

// Logs time/remaining_estimate_s (and time/elapsed_s) every batch: the train time so far divided by
// the fraction of max_duration done, less what is done. Evaluation time is counted too (it recurs).
class RuntimeEstimator : public Callback {
 public:
  RuntimeEstimator();
  ~RuntimeEstimator() override;
  void fit_start(State& state, Logger& logger) override;
  void batch_end(State& state, Logger& logger) override;
  std::optional<double> remaining_s() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Drops the model's outputs after the loss is computed (after_loss), to free their memory early.
class FreeOutputs : public Callback {
 public:
  void after_loss(State& state, Logger& logger) override;
};

// A callback from functions: { {Event::kBatchEnd, [](State& s, Logger& l) {...}}, ... }.
class LambdaCallback : public Callback {
 public:
  using Hook = std::function<void(State&, Logger&)>;
  explicit LambdaCallback(std::map<Event, Hook> hooks) : hooks_(std::move(hooks)) {}
  void run_event(Event event, State& state, Logger& logger) override;

 private:
  std::map<Event, Hook> hooks_;
};

}  // namespace baton
