// JsonlLogger: every log_metrics call as one JSON line, with the step and the wall-clock time.
//
//   {"step": 120, "time": 1763800000.12, "train/loss": 0.4812}
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "baton/core/logger.h"

namespace baton {

class JsonlLogger : public LoggerDestination {
 public:
  // Creates or truncates `path`. Throws std::runtime_error naming the path when it cannot.
  explicit JsonlLogger(const std::string& path);
  ~JsonlLogger() override;

  void log_metrics(const Metrics& metrics, int64_t step) override;
  void log_hyperparameters(const nlohmann::json& hyperparameters) override;
  void epoch_end(State& state, Logger& logger) override;
  void close(State& state, Logger& logger) override;

 private:
  std::FILE* file_;
  std::string path_;
};

}  // namespace baton
