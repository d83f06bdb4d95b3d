#include "baton/exec/middleware.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>

#include "exec/clock.h"

namespace baton {

void Middleware::set_engine(std::shared_ptr<ExecutionEngine> engine) {
  if (engine_) throw std::logic_error("Middleware::set_engine: the engine is already set (once only)");
  if (!engine) throw std::invalid_argument("Middleware::set_engine: no engine");
  engine_ = std::move(engine);
  on_engine_set();
}

ExecutionEngine& Middleware::engine() const {
  if (!engine_) throw std::logic_error("Middleware: no engine set (call set_engine first)");
  return *engine_;
}

int64_t Middleware::submit_invalid(const nlohmann::json& parameters, const std::string& reason) {
  const int64_t id = engine().add_unscheduled(parameters);
  TrainingEnd event(id, TrialStatus::kInvalid, reason);
  engine().dispatch(event);
  return id;
}

// ---- Chain ----------------------------------------------------------------------------------

Chain::Chain(std::vector<std::shared_ptr<Middleware>> middlewares) : middlewares_(std::move(middlewares)) {
  for (const auto& m : middlewares_)
    if (!m) throw std::invalid_argument("Chain: a middleware is null");
}

void Chain::set_engine(std::shared_ptr<ExecutionEngine> engine) {
  std::shared_ptr<ExecutionEngine> inner = std::move(engine);
  for (auto it = middlewares_.rbegin(); it != middlewares_.rend(); ++it) {
    (*it)->set_engine(inner);
    inner = *it;
  }
  Middleware::set_engine(inner);
}

// ---- Deduplication --------------------------------------------------------------------------

struct Deduplication::Impl {
  DuplicateAction action_;
  std::mutex mutex_;
  std::map<std::string, int64_t> seen_;  // canonical parameters -> first trial
};

Deduplication::~Deduplication() = default;

Deduplication::Deduplication(DeduplicationOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->action_ = options.action();
}

void Deduplication::on_engine_set() {
  std::lock_guard lock(impl_->mutex_);
  for (const auto& t : engine().list()) impl_->seen_.emplace(t.parameters.dump(), t.id);
}

int64_t Deduplication::submit(const nlohmann::json& parameters) {
  const std::string key = parameters.dump();  // nlohmann's objects are sorted: a canonical form
  std::optional<int64_t> first;
  {
    std::lock_guard lock(impl_->mutex_);
    if (auto it = impl_->seen_.find(key); it != impl_->seen_.end()) first = it->second;
  }
  if (!first) {
    const int64_t id = engine().submit(parameters);
    std::lock_guard lock(impl_->mutex_);
    impl_->seen_.emplace(key, id);
    return id;
  }
  const auto earlier = engine().get(*first);
  if (impl_->action_ == DuplicateAction::kInvalid || !earlier || !earlier->completed()) {
    return submit_invalid(parameters, "duplicate of trial " + std::to_string(*first));
  }
  const int64_t id = engine().add_unscheduled(parameters);
  TrainingStart start(id);
  engine().dispatch(start);
  for (const auto& v : earlier->metrics.intermediate) {
    IntermediateMetric e(id, v.value, v.step);
    engine().dispatch(e);
  }
  if (earlier->metrics.final) {
    FinalMetric e(id, *earlier->metrics.final);
    e.values = earlier->metrics.values;
    e.constraints = earlier->metrics.constraints;
    engine().dispatch(e);
  }
  TrainingEnd end(id, earlier->status, "replay of trial " + std::to_string(*first));
  engine().dispatch(end);
  return id;
}

// ---- Filter ---------------------------------------------------------------------------------

Filter::Filter(std::function<bool(const nlohmann::json&)> accept, std::string reason)
    : accept_(std::move(accept)), reason_(std::move(reason)) {
  if (!accept_) throw std::invalid_argument("Filter: no predicate");
}

int64_t Filter::submit(const nlohmann::json& parameters) {
  if (accept_(parameters)) return engine().submit(parameters);
  return submit_invalid(parameters, reason_);
}

// ---- FailureHandler -------------------------------------------------------------------------

struct FailureHandler::Impl {
  int retries_;
  std::optional<double> failure_metric_;
};

FailureHandler::~FailureHandler() = default;

FailureHandler::FailureHandler(FailureHandlerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->retries_ = options.retries();
  impl_->failure_metric_ = options.failure_metric();
  if (impl_->retries_ < 0) throw std::invalid_argument("FailureHandler: retries must be >= 0");
}

void FailureHandler::on_engine_set() {
  engine().register_callback(ModelEventType::kTrainingEnd, [this](ModelEvent& event) {
    auto& end = static_cast<TrainingEnd&>(event);
    if (end.status != TrialStatus::kFailed) return;
    if (impl_->failure_metric_) {
      FinalMetric metric(end.trial_id(), *impl_->failure_metric_);
      engine().dispatch(metric);
      end.status = TrialStatus::kTrained;
      end.error = "failed (" + end.error + "); reported as " + std::to_string(*impl_->failure_metric_);
      return;
    }
    const auto trial = engine().get(end.trial_id());
    if (trial && trial->attempts <= impl_->retries_) end.status = TrialStatus::kRetrying;  // the engine runs it again
  });
}

// ---- MedianStop -----------------------------------------------------------------------------

struct MedianStop::Impl {
  bool maximize_;
  int warmup_trials_;
  int64_t warmup_steps_;
  std::atomic<int64_t> kills_{0};
};

MedianStop::~MedianStop() = default;

int64_t MedianStop::kills() const { return impl_->kills_; }

MedianStop::MedianStop(MedianStopOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->maximize_ = options.maximize();
  impl_->warmup_trials_ = options.warmup_trials();
  impl_->warmup_steps_ = options.warmup_steps();
}

void MedianStop::on_engine_set() {
  engine().register_callback(ModelEventType::kIntermediateMetric, [this](ModelEvent& event) {
    const auto& e = static_cast<const IntermediateMetric&>(event);
    if (e.step < impl_->warmup_steps_) return;
    const auto trial = engine().get(e.trial_id());
    if (!trial || trial->status != TrialStatus::kRunning) return;
    std::vector<double> others;
    for (const auto& t : engine().list(TrialStatus::kTrained)) {
      if (auto best = t.best_up_to(e.step, impl_->maximize_)) others.push_back(*best);
    }
    if (static_cast<int>(others.size()) < impl_->warmup_trials_ || others.empty()) return;
    std::sort(others.begin(), others.end());
    const std::size_t n = others.size();
    const double median = n % 2 ? others[n / 2] : 0.5 * (others[n / 2 - 1] + others[n / 2]);
    std::optional<double> best = trial->best_up_to(e.step, impl_->maximize_);
    best = best ? (impl_->maximize_ ? std::max(*best, e.value) : std::min(*best, e.value)) : e.value;
    if (impl_->maximize_ ? *best < median : *best > median) {
      ++impl_->kills_;
      engine().kill(e.trial_id());
    }
  });
}

// ---- Asha -----------------------------------------------------------------------------------

struct Asha::Impl {
  bool maximize_;
  int64_t min_step_;
  int eta_;
  std::mutex mutex_;
  int brackets_;
  std::map<std::pair<int, int>, std::vector<double>> rungs_;  // (bracket, rung) -> values recorded there
  std::map<int64_t, int> next_rung_;                          // trial -> the next rung it has to pass
  std::atomic<int64_t> kills_{0};
};

Asha::~Asha() = default;

int64_t Asha::kills() const { return impl_->kills_; }

Asha::Asha(AshaOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->maximize_ = options.maximize();
  impl_->min_step_ = options.min_step();
  impl_->eta_ = options.reduction_factor();
  impl_->brackets_ = options.brackets();
  if (impl_->min_step_ < 1 || impl_->eta_ < 2 || impl_->brackets_ < 1)
    throw std::invalid_argument("Asha: min_step >= 1, reduction_factor >= 2 and brackets >= 1");
}

void Asha::on_engine_set() {
  engine().register_callback(ModelEventType::kIntermediateMetric, [this](ModelEvent& event) {
    const auto& e = static_cast<const IntermediateMetric&>(event);
    bool stop = false;
    {
      std::lock_guard lock(impl_->mutex_);
      int& rung = impl_->next_rung_[e.trial_id()];
      const int bracket = static_cast<int>(e.trial_id() % impl_->brackets_);
      for (;;) {
        const double rung_step =
            static_cast<double>(impl_->min_step_) * std::pow(static_cast<double>(impl_->eta_), rung + bracket);
        if (static_cast<double>(e.step) < rung_step) break;
        auto& values = impl_->rungs_[{bracket, rung}];
        values.push_back(e.value);
        ++rung;
        // The best 1/eta of the values at this rung (at least one) go on.
        const std::size_t keep = std::max<std::size_t>(1, values.size() / static_cast<std::size_t>(impl_->eta_));
        std::vector<double> sorted = values;
        if (impl_->maximize_)
          std::sort(sorted.begin(), sorted.end(), std::greater<>());
        else
          std::sort(sorted.begin(), sorted.end());
        const double cutoff = sorted[keep - 1];
        if (values.size() > 1 && (impl_->maximize_ ? e.value < cutoff : e.value > cutoff)) {
          stop = true;
          break;
        }
      }
    }
    if (stop) {
      ++impl_->kills_;
      engine().kill(e.trial_id());
    }
  });
}

// ---- Budget ---------------------------------------------------------------------------------

struct Budget::Impl {
  BudgetOptions options_;
  std::atomic<int64_t> submitted_{0};
  double start_s_ = 0.0;
};

Budget::~Budget() = default;

Budget::Budget(BudgetOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  if (impl_->options_.max_trials() && *impl_->options_.max_trials() < 0)
    throw std::invalid_argument("Budget: max_trials < 0");
}

void Budget::on_engine_set() { impl_->start_s_ = now_s(); }

bool Budget::budget_available() const {
  if (impl_->options_.max_trials() && impl_->submitted_ >= *impl_->options_.max_trials()) return false;
  if (impl_->options_.max_wall_s() && now_s() - impl_->start_s_ >= *impl_->options_.max_wall_s()) return false;
  if (impl_->options_.max_trial_seconds()) {
    const double now = now_s();
    double spent = 0.0;
    for (const auto& t : engine().list()) {
      if (t.started_at > 0.0) spent += (t.ended_at > 0.0 ? t.ended_at : now) - t.started_at;
    }
    if (spent >= *impl_->options_.max_trial_seconds()) return false;
  }
  return engine().budget_available();
}

int64_t Budget::submit(const nlohmann::json& parameters) {
  if (!budget_available()) throw std::runtime_error("Budget: the budget is spent; no more trials");
  ++impl_->submitted_;
  return engine().submit(parameters);
}

}  // namespace baton
