// Algorithms, callbacks and loggers that record what the engine does to them.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "baton/core/algorithm.h"
#include "baton/core/callback.h"
#include "baton/core/logger.h"
#include "baton/core/state.h"

namespace baton::testing {

using Log = std::vector<std::string>;

// Matches the given events; appends "<name>:<event>" to the log when applied.
class RecordingAlgorithm : public Algorithm {
 public:
  RecordingAlgorithm(std::string name, std::set<Event> events, std::shared_ptr<Log> log,
                     std::optional<int> exit_code = std::nullopt, bool interpolates = false)
      : name_(std::move(name)),
        events_(std::move(events)),
        log_(std::move(log)),
        exit_code_(exit_code),
        interpolates_(interpolates) {}
  std::string name() const override { return name_; }
  bool match(Event event, const State&) override { return events_.count(event) > 0; }
  std::optional<int> apply(Event event, State&, Logger&) override {
    log_->push_back(name_ + ":" + std::string(to_string(event)));
    return exit_code_;
  }
  bool interpolate_loss() const override { return interpolates_; }

 private:
  std::string name_;
  std::set<Event> events_;
  std::shared_ptr<Log> log_;
  std::optional<int> exit_code_;
  bool interpolates_;
};

// Appends "<name>:<event>" for every event, and "<name>:close" / "<name>:post_close".
class RecordingCallback : public Callback {
 public:
  RecordingCallback(std::string name, std::shared_ptr<Log> log, bool throw_on_close = false)
      : name_(std::move(name)), log_(std::move(log)), throw_on_close_(throw_on_close) {}
  std::string name() const override { return name_; }
  void run_event(Event event, State&, Logger&) override {
    log_->push_back(name_ + ":" + std::string(to_string(event)));
  }
  void close(State&, Logger&) override {
    log_->push_back(name_ + ":close");
    if (throw_on_close_) throw std::runtime_error(name_ + " failed to close");
  }
  void post_close() override { log_->push_back(name_ + ":post_close"); }

 private:
  std::string name_;
  std::shared_ptr<Log> log_;
  bool throw_on_close_;
};

class RecordingLogger : public LoggerDestination {
 public:
  RecordingLogger(std::string name, std::shared_ptr<Log> log) : name_(std::move(name)), log_(std::move(log)) {}
  std::string name() const override { return name_; }
  void run_event(Event event, State&, Logger&) override {
    log_->push_back(name_ + ":" + std::string(to_string(event)));
  }
  void log_metrics(const Metrics& metrics, int64_t step) override {
    for (const auto& [key, value] : metrics) {
      log_->push_back(name_ + ":metric:" + key + "=" + std::to_string(value) + "@" + std::to_string(step));
    }
  }
  void log_hyperparameters(const nlohmann::json& hp) override { log_->push_back(name_ + ":hparams:" + hp.dump()); }
  void log_traces(const Traces& traces) override {
    for (const auto& [key, trace] : traces) log_->push_back(name_ + ":trace:" + key);
  }

 private:
  std::string name_;
  std::shared_ptr<Log> log_;
};

}  // namespace baton::testing
