#include "baton/core/logger.h"

#include <utility>

#include "baton/core/state.h"

namespace baton {

Logger::Logger(State& state, std::vector<std::shared_ptr<LoggerDestination>> destinations)
    : state_(&state), destinations_(std::move(destinations)) {}

void Logger::log_metrics(const Metrics& metrics, std::optional<int64_t> step) {
  const int64_t at = step.value_or(state_->timestamp.batch());
  for (const auto& destination : destinations_) destination->log_metrics(metrics, at);
}

void Logger::log_hyperparameters(const nlohmann::json& hyperparameters) {
  for (const auto& destination : destinations_) destination->log_hyperparameters(hyperparameters);
}

void Logger::log_table(const std::string& key, const Table& table, std::optional<int64_t> step) {
  const int64_t at = step.value_or(state_->timestamp.batch());
  for (const auto& destination : destinations_) destination->log_table(key, table, at);
}

void Logger::log_traces(const Traces& traces) {
  for (const auto& destination : destinations_) destination->log_traces(traces);
}

void Logger::add_destination(std::shared_ptr<LoggerDestination> destination) {
  destinations_.push_back(std::move(destination));
}

}  // namespace baton
