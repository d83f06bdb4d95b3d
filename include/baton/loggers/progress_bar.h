// ProgressBar: where a run is, at a glance.
//
// On a terminal, one line redrawn in place at most ten times a second:
//   epoch 1/3 [#######.............] 140/468 batches  3120 sp/s  ETA 0:47  loss 0.4812
// When stdout is not a terminal (CI, a log file, | tee) it prints no carriage returns: one plain
// line per epoch and one per evaluation.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "baton/core/logger.h"
#include "baton/core/time.h"

namespace baton {

class ProgressBar : public LoggerDestination {
 public:
  ~ProgressBar() override;
  // `out` defaults to stdout; `terminal` defaults to whether it is a terminal.
  explicit ProgressBar(std::FILE* out = stdout, std::optional<bool> terminal = std::nullopt);

  void fit_start(State& state, Logger& logger) override;
  void epoch_start(State& state, Logger& logger) override;
  void batch_end(State& state, Logger& logger) override;
  void epoch_end(State& state, Logger& logger) override;
  void eval_end(State& state, Logger& logger) override;
  void fit_end(State& state, Logger& logger) override;
  void log_metrics(const Metrics& metrics, int64_t step) override;

 private:
  friend class ConsoleLogger;
  void draw(const State& state, bool force, bool epoch_done = false);
  void finish_line();

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Prints the latest metrics every `interval` of training (ep or ba), one line each.
class ConsoleLogger : public LoggerDestination {
 public:
  ~ConsoleLogger() override;
  // With a progress bar on the same output, the console leaves evaluations to the bar and ends
  // the bar's line before it prints.
  explicit ConsoleLogger(Time interval = Time::from_epoch(1), std::FILE* out = stdout, ProgressBar* bar = nullptr);
  void batch_end(State& state, Logger& logger) override;
  void epoch_end(State& state, Logger& logger) override;
  void eval_end(State& state, Logger& logger) override;
  void log_metrics(const Metrics& metrics, int64_t step) override;

 private:
  void print(const State& state);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
