// TraceProfiler: records the engine's and the trainer's spans (every event pair, every algorithm
// and callback on every event, the dataloader wait, forward, backward and optimizer step) on a
// cyclic schedule of batches, and writes each recorded window as a Chrome trace-event JSON file
// (`<folder>/ep{epoch}-ba{batch}.json`) that chrome://tracing and Perfetto open.
//
//   options.callbacks({std::make_shared<baton::TraceProfiler>(TraceProfilerOptions().folder("runs/x/traces"))});
//   baton train recipe.yaml --profile          # the same, into RUN_DIR/traces
//
// Schedule (torch.profiler's): skip `skip_first` batches, then `repeat` cycles (0: forever) of
// `wait` batches off, `warmup` batches on but discarded, `active` batches recorded.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baton/core/callback.h"
#include "baton/core/options.h"
#include "baton/core/profiler.h"

namespace baton {

class TraceProfilerOptions {
  BATON_ARG(std::string, folder) = "traces";
  BATON_ARG(int64_t, skip_first) = 0;
  BATON_ARG(int64_t, wait) = 0;
  BATON_ARG(int64_t, warmup) = 1;
  BATON_ARG(int64_t, active) = 5;
  BATON_ARG(int64_t, repeat) = 1;
};

class TraceProfiler : public Callback, public Profiler, public std::enable_shared_from_this<TraceProfiler> {
 public:
  ~TraceProfiler() override;
  explicit TraceProfiler(TraceProfilerOptions options = TraceProfilerOptions());

  // Profiler: spans started while a batch is recorded are kept, with their ends.
  void start(std::string_view name) override;
  void finish(std::string_view name) override;

  void init(State& state, Logger& logger) override;
  void fit_start(State& state, Logger& logger) override;
  void batch_start(State& state, Logger& logger) override;
  void batch_end(State& state, Logger& logger) override;
  void fit_end(State& state, Logger& logger) override;
  void close(State& state, Logger& logger) override;

  // The files written so far.
  const std::vector<std::string>& files() const;
  // Where the traces go (baton train puts a relative folder inside the run directory).
  const std::string& folder() const;
  void set_folder(std::string folder);
  // What the schedule does at batch `step` (0-based): 0 off, 1 warmup, 2 recorded.
  int phase(int64_t step) const;

 private:
  struct Span {
    std::string name;
    char phase;
    double ts_us;
    int tid;
  };
  void decide(int64_t next_step, const State& state);
  void flush();
  double now_us() const;
  int tid();

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
