#include "baton/exec/trial.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

#include "baton/core/options.h"

namespace baton {
namespace {

constexpr std::array<const char*, 7> kStatusNames = {"waiting",     "running", "trained", "failed",
                                                     "interrupted", "invalid", "retrying"};

}  // namespace

bool completed(TrialStatus status) {
  return status == TrialStatus::kTrained || status == TrialStatus::kFailed || status == TrialStatus::kInterrupted ||
         status == TrialStatus::kInvalid;
}

std::string to_string(TrialStatus status) { return kStatusNames.at(static_cast<std::size_t>(status)); }

TrialStatus trial_status_from_string(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (std::size_t i = 0; i < kStatusNames.size(); ++i) {
    if (lower == kStatusNames[i]) return static_cast<TrialStatus>(i);
  }
  throw std::invalid_argument(unknown_name("trial status", name, {kStatusNames.begin(), kStatusNames.end()}));
}

struct ModelEvent::Impl {
  ModelEventType type_;
  int64_t trial_id_;
  bool propagation_stopped_ = false;
  bool default_prevented_ = false;
};

ModelEvent::ModelEvent(ModelEventType type, int64_t trial_id)
    : impl_(std::make_unique<Impl>(Impl{.type_ = type, .trial_id_ = trial_id})) {}
ModelEvent::~ModelEvent() = default;
ModelEvent::ModelEvent(const ModelEvent& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
ModelEvent& ModelEvent::operator=(const ModelEvent& other) {
  *impl_ = *other.impl_;
  return *this;
}
ModelEventType ModelEvent::type() const { return impl_->type_; }
int64_t ModelEvent::trial_id() const { return impl_->trial_id_; }
void ModelEvent::stop_propagation() { impl_->propagation_stopped_ = true; }
void ModelEvent::prevent_default() { impl_->default_prevented_ = true; }
bool ModelEvent::propagation_stopped() const { return impl_->propagation_stopped_; }
bool ModelEvent::default_prevented() const { return impl_->default_prevented_; }

std::string to_string(ModelEventType type) {
  switch (type) {
    case ModelEventType::kTrainingStart: return "training_start";
    case ModelEventType::kIntermediateMetric: return "intermediate_metric";
    case ModelEventType::kFinalMetric: return "final_metric";
    case ModelEventType::kTrainingEnd: return "training_end";
  }
  return "?";
}

std::optional<double> Trial::best_up_to(int64_t step, bool maximize) const {
  std::optional<double> best;
  for (const auto& v : metrics.intermediate) {
    if (v.step > step) continue;
    if (!best || (maximize ? v.value > *best : v.value < *best)) best = v.value;
  }
  return best;
}

std::vector<double> Trial::objectives() const {
  if (!metrics.values.empty()) return metrics.values;
  if (metrics.final) return {*metrics.final};
  return {};
}

nlohmann::json Exploit::to_json() const {
  return {{"step", step},      {"at", at}, {"from", from}, {"score", score}, {"from_score", from_score},
          {"changes", changes}};
}

Exploit Exploit::from_json(const nlohmann::json& j) {
  Exploit e;
  e.step = j.value("step", int64_t{0});
  e.at = j.value("at", std::string());
  e.from = j.value("from", int64_t{0});
  e.score = j.value("score", 0.0);
  e.from_score = j.value("from_score", 0.0);
  e.changes = j.value("changes", nlohmann::json::object());
  return e;
}

nlohmann::json Trial::to_json() const {
  nlohmann::json inter = nlohmann::json::array();
  for (const auto& v : metrics.intermediate) inter.push_back({{"step", v.step}, {"value", v.value}});
  nlohmann::json j = {{"id", id},
                      {"status", to_string(status)},
                      {"parameters", parameters},
                      {"final", metrics.final ? nlohmann::json(*metrics.final) : nlohmann::json()},
                      {"intermediate", inter},
                      {"submitted_at", submitted_at},
                      {"started_at", started_at},
                      {"ended_at", ended_at},
                      {"attempts", attempts}};
  if (!metrics.values.empty()) j["values"] = metrics.values;
  if (!metrics.constraints.empty()) j["constraints"] = metrics.constraints;
  if (metrics.paused_at) j["paused_at"] = *metrics.paused_at;
  if (!error.empty()) j["error"] = error;
  if (!worker.empty()) j["worker"] = worker;
  j["exploits"] = nlohmann::json::array();
  for (const auto& e : exploits) j["exploits"].push_back(e.to_json());
  return j;
}

Trial Trial::from_json(const nlohmann::json& j) {
  Trial t;
  t.id = j.at("id").get<int64_t>();
  t.status = trial_status_from_string(j.at("status").get<std::string>());
  t.parameters = j.value("parameters", nlohmann::json::object());
  if (j.contains("final") && !j["final"].is_null()) t.metrics.final = j["final"].get<double>();
  for (const auto& v : j.value("intermediate", nlohmann::json::array())) {
    t.metrics.intermediate.push_back({v.at("step").get<int64_t>(), v.at("value").get<double>()});
  }
  t.metrics.values = j.value("values", std::vector<double>{});
  t.metrics.constraints = j.value("constraints", std::vector<double>{});
  if (j.contains("paused_at") && j["paused_at"].is_number_integer())
    t.metrics.paused_at = j["paused_at"].get<int64_t>();
  t.submitted_at = j.value("submitted_at", 0.0);
  t.started_at = j.value("started_at", 0.0);
  t.ended_at = j.value("ended_at", 0.0);
  t.attempts = j.value("attempts", 0);
  t.error = j.value("error", std::string());
  t.worker = j.value("worker", std::string());
  for (const auto& e : j.value("exploits", nlohmann::json::array())) t.exploits.push_back(Exploit::from_json(e));
  return t;
}

}  // namespace baton
