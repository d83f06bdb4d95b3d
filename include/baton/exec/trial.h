// Trials and the model events that change them (NNI's execution-engine vocabulary).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace baton {

enum class TrialStatus { kWaiting, kRunning, kTrained, kFailed, kInterrupted, kInvalid, kRetrying };

// Trained, Failed, Interrupted and Invalid are final; Waiting, Running and Retrying are not.
bool completed(TrialStatus status);
std::string to_string(TrialStatus status);
// "trained" etc. (case-insensitive); throws std::invalid_argument naming the known ones.
TrialStatus trial_status_from_string(const std::string& name);

struct IntermediateValue {
  int64_t step = 0;
  double value = 0.0;
};

struct TrialMetrics {
  std::vector<IntermediateValue> intermediate{};  // in the order reported
  std::optional<double> final{};                  // the (first) objective's final value
  // Several objectives: every objective's final value in the search's order (values[0] == final);
  // empty when the trial reported one number.
  std::vector<double> values{};
  // The constrained metrics' values, in the order of the search's constraints (empty: none).
  std::vector<double> constraints{};
  // Population-based training: the batch at which the last run paused at its interval's end
  // (nullopt: it ran to its end, or is not a PBT trial).
  std::optional<int64_t> paused_at{};
};

// Population-based training: at the end of an interval the trial took another trial's checkpoint
// (its weights, optimizer, schedulers and data position) and went on with changed parameters.
struct Exploit {
  int64_t step = 0;    // the interval's end: the batch
  std::string at{};    // the same as the interval's time ("1000ba", "2ep")
  int64_t from = 0;    // the trial whose checkpoint it copied
  double score = 0.0;  // its own metric there
  double from_score = 0.0;
  nlohmann::json changes = nlohmann::json::object();  // {name: [old, new]} for each parameter changed
  nlohmann::json to_json() const;
  static Exploit from_json(const nlohmann::json& j);
};

struct Trial {
  int64_t id = 0;
  nlohmann::json parameters = nlohmann::json::object();
  TrialStatus status = TrialStatus::kWaiting;
  TrialMetrics metrics{};
  double submitted_at = 0.0;  // seconds since the Unix epoch; 0 = not yet
  double started_at = 0.0;
  double ended_at = 0.0;
  int attempts = 0;  // runs started (1 + retries)
  std::string error{};
  std::string worker{};             // who runs or ran it, in a distributed search ("host:pid"); empty otherwise
  std::vector<Exploit> exploits{};  // population-based training: each copy of another trial's state

  bool completed() const { return baton::completed(status); }
  // Every objective's final value: `values`, or the one `final`; empty when none was reported.
  std::vector<double> objectives() const;
  // The best intermediate value up to `step` (inclusive), for the direction; nullopt when none.
  std::optional<double> best_up_to(int64_t step, bool maximize) const;
  nlohmann::json to_json() const;
  static Trial from_json(const nlohmann::json& j);
};

enum class ModelEventType { kTrainingStart, kIntermediateMetric, kFinalMetric, kTrainingEnd };
std::string to_string(ModelEventType type);

// A change to one trial, dispatched to the engine's listeners in registration order and then to
// its default action (which updates the trial). A listener may edit the event (e.g. turn a failure
// into a retry), stop_propagation() (no more listeners, no default action) or prevent_default()
// (the remaining listeners still run; the trial is not updated).
class ModelEvent {
 public:
  ModelEvent(ModelEventType type, int64_t trial_id);
  virtual ~ModelEvent();
  ModelEvent(const ModelEvent& other);
  ModelEvent& operator=(const ModelEvent& other);
  ModelEventType type() const;
  int64_t trial_id() const;
  void stop_propagation();
  void prevent_default();
  bool propagation_stopped() const;
  bool default_prevented() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct IntermediateMetric : ModelEvent {
  IntermediateMetric(int64_t trial, double v, int64_t s)
      : ModelEvent(ModelEventType::kIntermediateMetric, trial), value(v), step(s) {}
  double value;
  int64_t step;
};

// The trial's final value, or (several objectives) its values, and its constrained metrics' values.
struct FinalMetric : ModelEvent {
  FinalMetric(int64_t trial, double v) : ModelEvent(ModelEventType::kFinalMetric, trial), value(v) {}
  double value;
  std::vector<double> values{};  // several objectives (values[0] == value); empty: one
  std::vector<double> constraints{};
  std::optional<int64_t> paused_at{};  // population-based training: stopped at its interval's end, at this batch
};

// A worker began a run of the trial (Waiting or Retrying -> Running; attempts + 1).
struct TrainingStart : ModelEvent {
  explicit TrainingStart(int64_t trial) : ModelEvent(ModelEventType::kTrainingStart, trial) {}
};

// A trial's run ended: Trained, Failed, Interrupted or Invalid (Retrying: it will run again).
struct TrainingEnd : ModelEvent {
  TrainingEnd(int64_t trial, TrialStatus s, std::string e = {})
      : ModelEvent(ModelEventType::kTrainingEnd, trial), status(s), error(std::move(e)) {}
  TrialStatus status;
  std::string error;
};

}  // namespace baton
