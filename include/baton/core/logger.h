// Logger and LoggerDestination: where metrics, hyperparameters and traces go.
//
// The Logger fans each call out to its destinations (console, files, TensorBoard, in-memory).
// A LoggerDestination is also a Callback and lives in State::callbacks, so it sees events too.
//
//   logger.log_metrics({{"train/loss", 0.31}});           // step defaults to the batch count
//   logger.log_hyperparameters({{"lr", 0.1}, {"seed", 17}});
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/callback.h"
#include "baton/core/trace.h"

namespace baton {

class State;

using Metrics = std::map<std::string, double>;

// A metric that is a table (a confusion matrix): its rows, and the names of its rows and columns
// (a data set's class names; empty: their indices).
struct Table {
  std::vector<std::vector<double>> rows;
  std::vector<std::string> labels;
};

class LoggerDestination : public Callback {
 public:
  virtual void log_metrics(const Metrics& /*metrics*/, int64_t /*step*/) {}
  virtual void log_hyperparameters(const nlohmann::json& /*hyperparameters*/) {}
  // Traces of the algorithms that ran on one event.
  virtual void log_traces(const Traces& /*traces*/) {}
  // A table metric under its key ("eval/confusion_matrix").
  virtual void log_table(const std::string& /*key*/, const Table& /*table*/, int64_t /*step*/) {}

  bool is_logger_destination() const final { return true; }
};

class Logger {
 public:
  explicit Logger(State& state, std::vector<std::shared_ptr<LoggerDestination>> destinations = {});

  // `step` defaults to the state's batch count.
  void log_metrics(const Metrics& metrics, std::optional<int64_t> step = std::nullopt);
  void log_hyperparameters(const nlohmann::json& hyperparameters);
  void log_traces(const Traces& traces);
  void log_table(const std::string& key, const Table& table, std::optional<int64_t> step = std::nullopt);

  const std::vector<std::shared_ptr<LoggerDestination>>& destinations() const { return destinations_; }
  void add_destination(std::shared_ptr<LoggerDestination> destination);

 private:
  State* state_;
  std::vector<std::shared_ptr<LoggerDestination>> destinations_;
};

}  // namespace baton
