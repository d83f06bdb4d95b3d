#include "baton/loggers/in_memory_logger.h"

namespace baton {

struct InMemoryLogger::Impl {
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<std::pair<int64_t, double>>> series_;
  nlohmann::json hyperparameters_ = nlohmann::json::object();
  std::map<std::string, int64_t> trace_runs_;
};

InMemoryLogger::InMemoryLogger() : impl_(std::make_unique<Impl>()) {}
InMemoryLogger::~InMemoryLogger() = default;

void InMemoryLogger::log_metrics(const Metrics& metrics, int64_t step) {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  for (const auto& [name, value] : metrics) impl_->series_[name].emplace_back(step, value);
}

void InMemoryLogger::log_hyperparameters(const nlohmann::json& hyperparameters) {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  impl_->hyperparameters_.update(hyperparameters);
}

void InMemoryLogger::log_traces(const Traces& traces) {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  for (const auto& [key, trace] : traces) {
    if (trace.run) ++impl_->trace_runs_[key];
  }
}

std::map<std::string, int64_t> InMemoryLogger::trace_runs() const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  return impl_->trace_runs_;
}

std::vector<std::pair<int64_t, double>> InMemoryLogger::series(const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  const auto it = impl_->series_.find(name);
  return it == impl_->series_.end() ? std::vector<std::pair<int64_t, double>>{} : it->second;
}

Metrics InMemoryLogger::latest() const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  Metrics out;
  for (const auto& [name, values] : impl_->series_) {
    if (!values.empty()) out[name] = values.back().second;
  }
  return out;
}

std::optional<double> InMemoryLogger::latest(const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  const auto it = impl_->series_.find(name);
  if (it == impl_->series_.end() || it->second.empty()) return std::nullopt;
  return it->second.back().second;
}

nlohmann::json InMemoryLogger::hyperparameters() const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  return impl_->hyperparameters_;
}

}  // namespace baton
