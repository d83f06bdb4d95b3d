// JsonlLogger: every log_metrics call as one JSON line, with the step and the wall-clock time; at
// each epoch's end (and at close), how often each algorithm ran on each event since the last such line.
//
//   {"step": 120, "time": 1763800000.12, "train/loss": 0.4812}
//   {"step": 469, "time": 1763800009.70, "traces": {"LabelSmoothing/before_loss": 469}}
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "baton/core/logger.h"

namespace baton {

class JsonlLogger : public LoggerDestination {
 public:
  // Creates or truncates `path`. With `resume` (baton train --autoresume) it keeps the lines of
  // the run it continues instead: at after_load, those up to the batch the run resumed from (none
  // when it starts afresh; a line cut short by a kill is dropped), and appends after them, so each
  // batch is logged once. Throws std::runtime_error naming the path when it cannot write there.
  explicit JsonlLogger(const std::string& path, bool resume = false);
  ~JsonlLogger() override;

  void log_metrics(const Metrics& metrics, int64_t step) override;
  void log_hyperparameters(const nlohmann::json& hyperparameters) override;
  void log_traces(const Traces& traces) override;
  void after_load(State& state, Logger& logger) override;
  void epoch_end(State& state, Logger& logger) override;
  void close(State& state, Logger& logger) override;

 private:
  void write(const std::string& line);
  // Keeps the file's lines up to `batch` (none for 0), then what waited for this decision.
  void continue_from(int64_t batch);
  // The traces line for what ran since the last one, if anything did.
  void write_traces(int64_t step);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
