#include "baton/exec/engine.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "exec/clock.h"

namespace baton {
namespace {

class Context : public TrialContext {
 public:
  Context(ExecutionEngine& engine, int64_t id, const nlohmann::json& parameters, const std::atomic<bool>& stop)
      : engine_(engine), id_(id), parameters_(parameters), stop_(stop) {}
  int64_t trial_id() const override { return id_; }
  const nlohmann::json& parameters() const override { return parameters_; }
  void report_intermediate(double value, int64_t step) override {
    if (stop_) return;
    IntermediateMetric event(id_, value, step);
    engine_.dispatch(event);
  }
  void report_final(double value) override { report_values({value}, {}); }
  void report_values(const std::vector<double>& values, const std::vector<double>& constraints) override {
    if (stop_) return;
    if (values.empty()) {
      bad_final_ = "the trial reported no final value";
      return;
    }
    for (double v : values) {
      if (!std::isfinite(v)) {
        bad_final_ = "the final value is " + std::to_string(v);
        return;
      }
    }
    FinalMetric event(id_, values.front());
    if (values.size() > 1) event.values = values;
    event.constraints = constraints;
    engine_.dispatch(event);
    final_reported_ = true;
  }
  bool should_stop() const override { return stop_; }
  bool final_reported() const { return final_reported_; }
  const std::string& bad_final() const { return bad_final_; }

 private:
  ExecutionEngine& engine_;
  int64_t id_;
  const nlohmann::json& parameters_;
  const std::atomic<bool>& stop_;
  bool final_reported_ = false;
  std::string bad_final_;
};

}  // namespace

void run_trial_function(ExecutionEngine& engine, const TrialFunction& function, int64_t id,
                        const nlohmann::json& parameters, const std::atomic<bool>& stop) {
  TrainingStart start(id);
  engine.dispatch(start);
  Context context(engine, id, parameters, stop);
  std::string error;
  try {
    function(context);
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "the trial threw an exception without a message";
  } catch (...) {
    error = "the trial threw something that is not a std::exception";
  }
  TrialStatus status = TrialStatus::kTrained;
  if (stop) {
    status = TrialStatus::kInterrupted;
    error = "killed";
  } else if (!error.empty()) {
    status = TrialStatus::kFailed;
  } else if (!context.bad_final().empty()) {
    status = TrialStatus::kFailed;
    error = context.bad_final();
  } else if (!context.final_reported()) {
    status = TrialStatus::kFailed;
    error = "the trial returned without reporting a final value";
  }
  TrainingEnd end(id, status, error);
  engine.dispatch(end);
}

// ---- TrialTable -----------------------------------------------------------------------------

struct TrialTable::Impl {
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int64_t, Trial> trials_;
  int64_t next_id_ = 0;
  int64_t unfinished_ = 0;  // trials not completed: waits need no scan
  std::mutex listeners_mutex_;
  std::vector<std::pair<int, std::pair<ModelEventType, ModelEventCallback>>> listeners_;
  int next_handle_ = 0;
  std::deque<int64_t> completed_order_;  // for wait_any: completions not yet taken
  std::function<void(const Trial&)> observer_;
};

std::mutex& TrialTable::table_mutex() const { return impl_->mutex_; }
void TrialTable::notify_changed() { impl_->changed_.notify_all(); }
const Trial& TrialTable::trial_locked(int64_t id) const { return impl_->trials_.at(id); }
const Trial* TrialTable::find_trial_locked(int64_t id) const {
  const auto it = impl_->trials_.find(id);
  return it == impl_->trials_.end() ? nullptr : &it->second;
}
std::size_t TrialTable::trial_count_locked() const { return impl_->trials_.size(); }

TrialTable::TrialTable() : impl_(std::make_unique<Impl>()) {}
TrialTable::~TrialTable() = default;

int64_t TrialTable::add_trial(const nlohmann::json& parameters, std::optional<int64_t> id) {
  std::lock_guard lock(impl_->mutex_);
  Trial t;
  if (id && impl_->trials_.count(*id))
    throw std::invalid_argument("submit_as: trial " + std::to_string(*id) + " exists");
  t.id = id ? *id : impl_->next_id_;
  impl_->next_id_ = std::max(impl_->next_id_, t.id + 1);
  t.parameters = parameters;
  t.submitted_at = now_s();
  impl_->trials_[t.id] = t;
  ++impl_->unfinished_;
  if (impl_->observer_) impl_->observer_(t);
  return t.id;
}

int64_t TrialTable::submit_as(int64_t id, const nlohmann::json& parameters) {
  add_trial(parameters, id);
  requeue(id);
  return id;
}

bool TrialTable::continue_trial(int64_t id, const std::function<void(Trial&)>& change) {
  {
    std::lock_guard lock(impl_->mutex_);
    auto it = impl_->trials_.find(id);
    if (it == impl_->trials_.end() || it->second.status != TrialStatus::kTrained) return false;
    change(it->second);
    it->second.status = TrialStatus::kWaiting;
    it->second.ended_at = 0.0;
    std::erase(impl_->completed_order_, id);
    ++impl_->unfinished_;
  }
  notify_observer(id);
  impl_->changed_.notify_all();
  requeue(id);
  return true;
}

void TrialTable::forget(int64_t id) {
  std::lock_guard lock(impl_->mutex_);
  auto it = impl_->trials_.find(id);
  if (it == impl_->trials_.end() || !it->second.completed()) return;
  impl_->trials_.erase(it);
  std::erase(impl_->completed_order_, id);
}

void TrialTable::sync_trial(const Trial& trial, bool announce) {
  {
    std::lock_guard lock(impl_->mutex_);
    auto it = impl_->trials_.find(trial.id);
    const bool was_completed = it != impl_->trials_.end() && it->second.completed();
    const bool is_new = it == impl_->trials_.end();
    impl_->trials_[trial.id] = trial;
    impl_->next_id_ = std::max(impl_->next_id_, trial.id + 1);
    if (is_new)
      impl_->unfinished_ += trial.completed() ? 0 : 1;
    else
      impl_->unfinished_ += static_cast<int64_t>(was_completed) - static_cast<int64_t>(trial.completed());
    if (!was_completed && trial.completed() && (announce || !is_new)) impl_->completed_order_.push_back(trial.id);
    if (was_completed && !trial.completed()) std::erase(impl_->completed_order_, trial.id);
  }
  impl_->changed_.notify_all();
}

void TrialTable::set_observer(std::function<void(const Trial&)> observer) {
  std::lock_guard lock(impl_->mutex_);
  impl_->observer_ = std::move(observer);
}

std::vector<Trial> TrialTable::list(std::optional<TrialStatus> status) const {
  std::lock_guard lock(impl_->mutex_);
  std::vector<Trial> out;
  for (const auto& [id, t] : impl_->trials_) {
    if (!status || t.status == *status) out.push_back(t);
  }
  return out;
}

std::optional<Trial> TrialTable::get(int64_t id) const {
  std::lock_guard lock(impl_->mutex_);
  auto it = impl_->trials_.find(id);
  if (it == impl_->trials_.end()) return std::nullopt;
  return it->second;
}

bool TrialTable::wait(const std::vector<int64_t>& ids, std::optional<double> timeout_s) {
  std::unique_lock lock(impl_->mutex_);
  auto done = [&] {
    if (ids.empty()) return impl_->unfinished_ == 0;
    for (int64_t id : ids) {
      auto it = impl_->trials_.find(id);
      if (it == impl_->trials_.end()) throw std::invalid_argument("wait: no trial " + std::to_string(id));
      if (!it->second.completed()) return false;
    }
    return true;
  };
  if (!timeout_s) {
    impl_->changed_.wait(lock, done);
    return true;
  }
  return impl_->changed_.wait_for(lock, std::chrono::duration<double>(*timeout_s), done);
}

std::optional<int64_t> TrialTable::wait_any(std::optional<double> timeout_s) {
  std::unique_lock lock(impl_->mutex_);
  auto ready = [&] {
    return !impl_->completed_order_.empty() || impl_->unfinished_ == 0;  // a completion, or nothing left to wait for
  };
  if (!timeout_s) {
    impl_->changed_.wait(lock, ready);
  } else if (!impl_->changed_.wait_for(lock, std::chrono::duration<double>(*timeout_s), ready)) {
    return std::nullopt;
  }
  if (impl_->completed_order_.empty()) return std::nullopt;
  const int64_t id = impl_->completed_order_.front();
  impl_->completed_order_.pop_front();
  return id;
}

int TrialTable::register_callback(ModelEventType type, ModelEventCallback callback) {
  std::lock_guard lock(impl_->listeners_mutex_);
  impl_->listeners_.push_back({impl_->next_handle_, {type, std::move(callback)}});
  return impl_->next_handle_++;
}

void TrialTable::unregister_callback(int handle) {
  std::lock_guard lock(impl_->listeners_mutex_);
  std::erase_if(impl_->listeners_, [&](const auto& l) { return l.first == handle; });
}

void TrialTable::dispatch(ModelEvent& event) {
  std::vector<ModelEventCallback> callbacks;
  {
    std::lock_guard lock(impl_->listeners_mutex_);
    for (const auto& [handle, listener] : impl_->listeners_) {
      if (listener.first == event.type()) callbacks.push_back(listener.second);
    }
  }
  for (const auto& callback : callbacks) {
    callback(event);
    if (event.propagation_stopped()) return;
  }
  if (!event.default_prevented()) default_callback(event);
}

void TrialTable::default_callback(ModelEvent& event) {
  bool requeue_it = false;
  {
    std::lock_guard lock(impl_->mutex_);
    auto it = impl_->trials_.find(event.trial_id());
    if (it == impl_->trials_.end()) return;
    Trial& t = it->second;
    const bool was_completed = t.completed();
    switch (event.type()) {
      case ModelEventType::kTrainingStart:
        t.status = TrialStatus::kRunning;
        t.started_at = now_s();
        t.ended_at = 0.0;
        ++t.attempts;
        break;
      case ModelEventType::kIntermediateMetric: {
        const auto& e = static_cast<const IntermediateMetric&>(event);
        auto& curve = t.metrics.intermediate;
        if (!curve.empty() && curve.back().step >= e.step)  // a run again: from e.step on, the new values
          std::erase_if(curve, [&](const IntermediateValue& v) { return v.step >= e.step; });
        curve.push_back({e.step, e.value});
        break;
      }
      case ModelEventType::kFinalMetric: {
        const auto& e = static_cast<const FinalMetric&>(event);
        t.metrics.final = e.value;
        t.metrics.values = e.values;
        t.metrics.constraints = e.constraints;
        t.metrics.paused_at = e.paused_at;
        break;
      }
      case ModelEventType::kTrainingEnd: {
        const auto& e = static_cast<const TrainingEnd&>(event);
        t.status = e.status;
        t.error = e.error;
        if (e.status == TrialStatus::kRetrying) {
          t.metrics = {};
          requeue_it = true;
        } else {
          t.ended_at = now_s();
          if (t.completed()) impl_->completed_order_.push_back(t.id);
        }
        break;
      }
    }
    impl_->unfinished_ += static_cast<int64_t>(was_completed) - static_cast<int64_t>(t.completed());
  }
  notify_observer(event.trial_id());  // stored before any waiter wakes
  impl_->changed_.notify_all();
  if (requeue_it) requeue(event.trial_id());
}

void TrialTable::notify_observer(int64_t id) {
  std::function<void(const Trial&)> observer;
  Trial copy;
  {
    std::lock_guard lock(impl_->mutex_);
    auto it = impl_->trials_.find(id);
    if (!impl_->observer_ || it == impl_->trials_.end()) return;
    observer = impl_->observer_;
    copy = it->second;
  }
  observer(copy);
}

nlohmann::json TrialTable::state_dict() const {
  std::lock_guard lock(impl_->mutex_);
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& [id, t] : impl_->trials_) trials.push_back(t.to_json());
  return {{"next_id", impl_->next_id_}, {"trials", trials}};
}

void TrialTable::load_state_dict(const nlohmann::json& state) {
  std::vector<int64_t> unfinished;
  {
    std::lock_guard lock(impl_->mutex_);
    impl_->trials_.clear();
    impl_->completed_order_.clear();
    for (const auto& j : state.at("trials")) {
      Trial t = Trial::from_json(j);
      if (!t.completed()) {
        t.status = TrialStatus::kRetrying;  // its run was lost with the process that held it
        // Its curve stays: a run that resumes from a checkpoint reports only what comes after it
        // (and a step reported again replaces the old value and those after it).
        t.metrics = {std::move(t.metrics.intermediate)};
        unfinished.push_back(t.id);
      }
      impl_->trials_[t.id] = t;
    }
    impl_->unfinished_ = static_cast<int64_t>(unfinished.size());
    impl_->next_id_ = state.value("next_id", impl_->trials_.empty() ? int64_t{0} : impl_->trials_.rbegin()->first + 1);
  }
  for (int64_t id : unfinished) requeue(id);
}

bool TrialTable::retry(int64_t id) {
  auto t = get(id);
  if (!t || t->status == TrialStatus::kTrained || !t->completed()) return false;
  {
    std::lock_guard lock(impl_->mutex_);
    std::erase(impl_->completed_order_, id);
  }
  TrainingEnd event(id, TrialStatus::kRetrying, t->error);
  dispatch(event);
  return true;
}

// ---- SequentialEngine -----------------------------------------------------------------------

struct SequentialEngine::Impl {
  TrialFunction function_;
  std::deque<int64_t> pending_;
  bool running_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> current_{-1};
};

SequentialEngine::~SequentialEngine() = default;

int SequentialEngine::idle_workers() const { return impl_->running_ ? 0 : 1; }

SequentialEngine::SequentialEngine(TrialFunction function) : impl_(std::make_unique<Impl>()) {
  impl_->function_ = std::move(function);
}

int64_t SequentialEngine::submit(const nlohmann::json& parameters) {
  const int64_t id = add_trial(parameters);
  impl_->pending_.push_back(id);
  drain();
  return id;
}

void SequentialEngine::requeue(int64_t id) {
  impl_->pending_.push_back(id);
  if (!impl_->running_) drain();
}

void SequentialEngine::drain() {
  while (!impl_->pending_.empty() && !impl_->running_) {
    const int64_t id = impl_->pending_.front();
    impl_->pending_.pop_front();
    auto trial = get(id);
    if (!trial || trial->completed()) continue;
    impl_->running_ = true;
    impl_->stop_ = false;
    impl_->current_ = id;
    run_trial_function(*this, impl_->function_, id, trial->parameters, impl_->stop_);
    impl_->current_ = -1;
    impl_->running_ = false;
  }
}

bool SequentialEngine::kill(int64_t id) {
  auto trial = get(id);
  if (!trial || trial->completed()) return false;
  if (impl_->current_ == id) {
    impl_->stop_ = true;
    return true;
  }
  std::erase(impl_->pending_, id);
  TrainingEnd event(id, TrialStatus::kInterrupted, "killed");
  dispatch(event);
  return true;
}

// ---- QueuedEngine ---------------------------------------------------------------------------

struct QueuedEngine::Impl {
  std::deque<int64_t> queue_;  // under mutex_
  bool shutting_down_ = false;
  std::string name_;  // in errors
};

QueuedEngine::QueuedEngine(std::string name) : impl_(std::make_unique<Impl>()) { impl_->name_ = std::move(name); }
std::deque<int64_t>& QueuedEngine::queue_locked() { return impl_->queue_; }
const std::deque<int64_t>& QueuedEngine::queue_locked() const { return impl_->queue_; }
bool QueuedEngine::shutting_down_locked() const { return impl_->shutting_down_; }

QueuedEngine::~QueuedEngine() = default;

int64_t QueuedEngine::submit(const nlohmann::json& parameters) {
  {
    std::lock_guard lock(table_mutex());
    if (impl_->shutting_down_) throw std::runtime_error(impl_->name_ + ": submit after shutdown");
  }
  const int64_t id = add_trial(parameters);
  requeue(id);
  return id;
}

void QueuedEngine::requeue(int64_t id) {
  {
    std::lock_guard lock(table_mutex());
    if (!impl_->shutting_down_) {
      impl_->queue_.push_back(id);
      queued(id);
      return;
    }
  }
  TrainingEnd event(id, TrialStatus::kInterrupted, "the engine shut down before the trial could run");
  dispatch(event);
}

bool QueuedEngine::kill(int64_t id) {
  {
    std::lock_guard lock(table_mutex());
    const Trial* trial = find_trial_locked(id);
    if (trial == nullptr || trial->completed()) return false;
    auto q = std::find(impl_->queue_.begin(), impl_->queue_.end(), id);
    if (q == impl_->queue_.end()) {
      stop_running(id);
      return true;
    }
    impl_->queue_.erase(q);
  }
  TrainingEnd event(id, TrialStatus::kInterrupted, "killed before it started");
  dispatch(event);
  return true;
}

void QueuedEngine::close_queue(const std::function<void()>& under_lock) {
  std::deque<int64_t> never_started;
  {
    std::lock_guard lock(table_mutex());
    impl_->shutting_down_ = true;
    never_started.swap(impl_->queue_);
    under_lock();
  }
  for (int64_t id : never_started) {
    TrainingEnd event(id, TrialStatus::kInterrupted, "the engine shut down before the trial started");
    dispatch(event);
  }
}

// ---- ThreadPoolEngine -----------------------------------------------------------------------

struct ThreadPoolEngine::Impl {
  TrialFunction function_;
  int workers_;
  std::map<int64_t, std::shared_ptr<std::atomic<bool>>> stop_flags_;  // of the running trials
  int busy_ = 0;
  std::condition_variable work_ready_;
  std::vector<std::thread> threads_;
};

ThreadPoolEngine::ThreadPoolEngine(TrialFunction function, int workers)
    : QueuedEngine("ThreadPoolEngine"), impl_(std::make_unique<Impl>()) {
  impl_->function_ = std::move(function);
  impl_->workers_ = workers;
  if (workers < 1)
    throw std::invalid_argument("ThreadPoolEngine: workers must be at least 1, got " + std::to_string(workers));
  for (int i = 0; i < workers; ++i) impl_->threads_.emplace_back([this] { work(); });
}

ThreadPoolEngine::~ThreadPoolEngine() { shutdown(); }

void ThreadPoolEngine::queued(int64_t) { impl_->work_ready_.notify_one(); }

void ThreadPoolEngine::stop_running(int64_t id) {
  if (auto f = impl_->stop_flags_.find(id); f != impl_->stop_flags_.end()) *f->second = true;
}

void ThreadPoolEngine::work() {
  for (;;) {
    int64_t id = 0;
    nlohmann::json parameters;
    std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
    {
      std::unique_lock lock(table_mutex());
      impl_->work_ready_.wait(lock, [&] { return shutting_down_locked() || !queue_locked().empty(); });
      if (queue_locked().empty()) return;
      id = queue_locked().front();
      queue_locked().pop_front();
      parameters = trial_locked(id).parameters;
      impl_->stop_flags_[id] = stop;
      ++impl_->busy_;
    }
    run_trial_function(*this, impl_->function_, id, parameters, *stop);
    {
      std::lock_guard lock(table_mutex());
      --impl_->busy_;
      if (impl_->stop_flags_.count(id) && impl_->stop_flags_[id] == stop) impl_->stop_flags_.erase(id);
    }
    notify_changed();
  }
}

int ThreadPoolEngine::idle_workers() const {
  std::lock_guard lock(table_mutex());
  return std::max(0, impl_->workers_ - impl_->busy_ - static_cast<int>(queue_locked().size()));
}

void ThreadPoolEngine::shutdown() {
  {
    std::lock_guard lock(table_mutex());
    if (shutting_down_locked() && impl_->threads_.empty()) return;
  }
  close_queue([this] {
    for (auto& [id, flag] : impl_->stop_flags_) *flag = true;  // running ones stop at their next check
  });
  impl_->work_ready_.notify_all();
  for (auto& t : impl_->threads_) t.join();
  impl_->threads_.clear();
}

}  // namespace baton
