// InMemoryLogger: keeps every logged metric in memory, for tests and the C++ API.
//
//   auto memory = std::make_shared<baton::InMemoryLogger>();
//   TrainerOptions().loggers({memory});  ...  memory->series("train/loss")  // [(step, value), ...]
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "baton/core/logger.h"

namespace baton {

class InMemoryLogger : public LoggerDestination {
 public:
  InMemoryLogger();
  ~InMemoryLogger() override;
  void log_metrics(const Metrics& metrics, int64_t step) override;
  void log_hyperparameters(const nlohmann::json& hyperparameters) override;
  void log_traces(const Traces& traces) override;

  // Every value of one metric, with its step, in logging order.
  std::vector<std::pair<int64_t, double>> series(const std::string& name) const;
  // The last value of each metric.
  Metrics latest() const;
  std::optional<double> latest(const std::string& name) const;
  nlohmann::json hyperparameters() const;
  // How often each algorithm ran on each event, by trace key ("LabelSmoothing/before_loss").
  std::map<std::string, int64_t> trace_runs() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
