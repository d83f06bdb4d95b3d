#include "baton/exec/distributed.h"

#include <unistd.h>
#include <memory>

#include <cerrno>
#include <csignal>
#include <cstdio>

#include "exec/clock.h"

namespace baton {
namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

// A copy of a local engine's event, for this engine's listeners.
std::unique_ptr<ModelEvent> copy_event(const ModelEvent& e) {
  switch (e.type()) {
    case ModelEventType::kTrainingStart: return std::make_unique<TrainingStart>(e.trial_id());
    case ModelEventType::kIntermediateMetric: {
      const auto& m = static_cast<const IntermediateMetric&>(e);
      return std::make_unique<IntermediateMetric>(e.trial_id(), m.value, m.step);
    }
    case ModelEventType::kFinalMetric:
      return std::make_unique<FinalMetric>(e.trial_id(), static_cast<const FinalMetric&>(e).value);
    case ModelEventType::kTrainingEnd: {
      const auto& end = static_cast<const TrainingEnd&>(e);
      return std::make_unique<TrainingEnd>(e.trial_id(), end.status, end.error);
    }
  }
  return nullptr;
}

}  // namespace

std::string default_worker_name() { return host_name() + ":" + std::to_string(::getpid()); }

bool local_worker_gone(const std::string& worker) {
  const auto colon = worker.rfind(':');
  if (colon == std::string::npos || worker.substr(0, colon) != host_name()) return false;
  try {
    const auto pid = static_cast<pid_t>(std::stol(worker.substr(colon + 1)));
    if (pid <= 0 || pid == ::getpid()) return false;
    return ::kill(pid, 0) == -1 && errno == ESRCH;
  } catch (const std::exception&) {
    return false;
  }
}

struct DistributedEngine::Impl {
  std::shared_ptr<TrialStorage> storage_;
  std::shared_ptr<TrialTable> local_;
  DistributedOptions options_;
  int capacity_ = 1;
  std::mutex claim_mutex_;  // a claim and its bookkeeping, against a give-back of the same trial
  mutable std::mutex own_mutex_;
  std::set<int64_t> owned_;  // trials this worker owns in the storage (running here, or unscheduled)
  int active_ = 0;           // running here
  int claimable_ = 0;        // unowned waiting trials at the last read
  int64_t known_ = 0;        // trials in the storage at the last read
  std::atomic<int64_t> requeued_{0};
  std::vector<int> handles_;
  std::mutex loop_mutex_;
  std::condition_variable loop_wake_;
  bool stopping_ = false;
  bool woken_ = false;
  std::thread thread_;
};

const std::string& DistributedEngine::worker() const { return impl_->options_.worker(); }
int64_t DistributedEngine::requeued() const { return impl_->requeued_; }

DistributedEngine::DistributedEngine(std::shared_ptr<TrialStorage> storage, std::shared_ptr<TrialTable> local,
                                     DistributedOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->storage_ = std::move(storage);
  impl_->local_ = std::move(local);
  impl_->options_ = std::move(options);
  if (!impl_->storage_ || !impl_->local_)
    throw std::invalid_argument("DistributedEngine: needs a storage and a local engine");
  if (impl_->options_.worker().empty()) impl_->options_.worker(default_worker_name());
  if (impl_->options_.heartbeat_s() <= 0 || impl_->options_.stale_after_s() <= impl_->options_.heartbeat_s())
    throw std::invalid_argument("DistributedEngine: stale_after_s must be longer than heartbeat_s (> 0)");
  impl_->capacity_ = std::max(1, impl_->local_->idle_workers());
  for (auto type : {ModelEventType::kTrainingStart, ModelEventType::kIntermediateMetric, ModelEventType::kFinalMetric,
                    ModelEventType::kTrainingEnd}) {
    impl_->handles_.push_back(impl_->local_->register_callback(type, [this](ModelEvent& e) { forward(e); }));
  }
  TrialTable::set_observer([this](const Trial& t) {
    if (owns(t.id)) {
      impl_->storage_->save_owned(t, impl_->options_.worker());
      if (t.completed()) {
        std::lock_guard lock(impl_->own_mutex_);
        impl_->owned_.erase(t.id);
      }
    }
    if (user_observer_) user_observer_(t);
  });
  sync(false);  // list() shows the search as it is before the first submit (run_search restores it)
  impl_->thread_ = std::thread([this] { loop(); });
}

DistributedEngine::~DistributedEngine() {
  shutdown();
  for (int h : impl_->handles_) impl_->local_->unregister_callback(h);
}

bool DistributedEngine::owns(int64_t id) const {
  std::lock_guard lock(impl_->own_mutex_);
  return impl_->owned_.count(id) > 0;
}

void DistributedEngine::set_observer(std::function<void(const Trial&)> observer) {
  user_observer_ = std::move(observer);
}

Trial DistributedEngine::create_owned(const nlohmann::json& parameters) {
  // Held until it is owned: sync() would take a copy of it from the storage for another worker's.
  std::unique_lock claiming(impl_->claim_mutex_);
  const auto id = impl_->storage_->create_trial(parameters, impl_->options_.limit(), impl_->options_.worker());
  if (!id) {
    claiming.unlock();
    sync();
    throw BudgetExhausted("the search's " + std::to_string(impl_->options_.limit()) + " trials exist already");
  }
  Trial t;
  t.id = *id;
  t.parameters = parameters;
  t.submitted_at = now_s();
  t.worker = impl_->options_.worker();
  std::lock_guard lock(impl_->own_mutex_);
  impl_->owned_.insert(t.id);
  return t;
}

int64_t DistributedEngine::submit(const nlohmann::json& parameters) {
  const Trial t = create_owned(parameters);
  run_here(t);
  return t.id;
}

int64_t DistributedEngine::add_unscheduled(const nlohmann::json& parameters) {
  const Trial t = create_owned(parameters);
  sync_trial(t);
  return t.id;
}

void DistributedEngine::run_here(const Trial& trial) {
  sync_trial(trial);
  {
    std::lock_guard lock(impl_->own_mutex_);
    ++impl_->active_;
  }
  // An earlier run of it here (before a retry) leaves the local table; the retry is decided
  // while the local engine is still ending that run, so it is waited for (a moment).
  if (auto earlier = impl_->local_->get(trial.id); earlier && !earlier->completed())
    impl_->local_->wait({trial.id}, 30.0);
  impl_->local_->forget(trial.id);
  try {
    impl_->local_->submit_as(trial.id, trial.parameters);
  } catch (...) {
    {
      std::lock_guard lock(impl_->own_mutex_);
      --impl_->active_;
      impl_->owned_.erase(trial.id);
    }
    impl_->storage_->release(trial.id, impl_->options_.worker());
    throw;
  }
}

void DistributedEngine::forward(ModelEvent& event) {
  const bool end = event.type() == ModelEventType::kTrainingEnd;
  if (owns(event.trial_id())) {
    auto copy = copy_event(event);
    dispatch(*copy);
  }
  if (end) {
    {
      std::lock_guard lock(impl_->own_mutex_);
      --impl_->active_;
    }
    wake();  // a free worker: claim what waits
  }
}

void DistributedEngine::requeue(int64_t id) {  // a retry: back to the queue, for any worker
  {
    // Not between this worker's own claim of it and the claim's bookkeeping.
    std::lock_guard claiming(impl_->claim_mutex_);
    impl_->storage_->release(id, impl_->options_.worker());
    std::lock_guard lock(impl_->own_mutex_);
    impl_->owned_.erase(id);
  }
  wake();
}

void DistributedEngine::wake() {
  {
    std::lock_guard lock(impl_->loop_mutex_);
    impl_->woken_ = true;
  }
  impl_->loop_wake_.notify_all();
}

bool DistributedEngine::kill(int64_t id) {
  auto t = get(id);
  if (!t || t->completed()) return false;
  if (owns(id)) return impl_->local_->kill(id);
  if (t->status != TrialStatus::kWaiting && t->status != TrialStatus::kRetrying) return false;
  t->status = TrialStatus::kInterrupted;
  t->error = "killed before it ran";
  t->ended_at = now_s();
  if (!impl_->storage_->end_unclaimed(*t)) return false;
  sync_trial(*t);
  return true;
}

int DistributedEngine::idle_workers() const {
  std::lock_guard lock(impl_->own_mutex_);
  return std::max(0, impl_->capacity_ - impl_->active_ - impl_->claimable_);
}

bool DistributedEngine::budget_available() const {
  std::lock_guard lock(table_mutex());
  return static_cast<int64_t>(trial_count_locked()) < impl_->options_.limit();
}

void DistributedEngine::load_state_dict(const nlohmann::json&) {
  throw std::logic_error("DistributedEngine: the state is the shared storage; nothing to load");
}

void DistributedEngine::shutdown() {
  {
    std::lock_guard lock(impl_->loop_mutex_);
    if (impl_->stopping_) return;
    impl_->stopping_ = true;
  }
  impl_->loop_wake_.notify_all();
  if (impl_->thread_.joinable()) impl_->thread_.join();
  impl_->local_->shutdown();
}

void DistributedEngine::sync(bool announce) {
  int claimable = 0;
  for (const auto& s : impl_->storage_->states()) {
    if (s.worker.empty() && (s.status == TrialStatus::kWaiting || s.status == TrialStatus::kRetrying)) ++claimable;
    // Not while this worker creates or claims it: a copy loaded before would overwrite its events.
    std::lock_guard claiming(impl_->claim_mutex_);
    if (owns(s.id)) continue;  // this worker's events keep it current
    const auto mine = get(s.id);
    if (mine && mine->status == s.status && mine->worker == s.worker) continue;
    if (auto t = impl_->storage_->load_trial(s.id)) sync_trial(*t, announce);
  }
  std::lock_guard lock(impl_->own_mutex_);
  impl_->claimable_ = claimable;
}

void DistributedEngine::beat_and_reap() {
  std::vector<int64_t> ids;
  {
    std::lock_guard lock(impl_->own_mutex_);
    ids.assign(impl_->owned_.begin(), impl_->owned_.end());
  }
  const auto beat = impl_->storage_->heartbeat(impl_->options_.worker(), ids);
  for (int64_t id : beat.lost) {  // another worker runs it now: stop ours, its events no longer count
    {
      std::lock_guard lock(impl_->own_mutex_);
      impl_->owned_.erase(id);
    }
    impl_->local_->kill(id);
  }
  for (int64_t id : beat.reattached) {
    if (auto t = get(id)) impl_->storage_->save_owned(*t, impl_->options_.worker());
  }
  const auto requeued = impl_->storage_->requeue_stale(impl_->options_.stale_after_s(), local_worker_gone);
  impl_->requeued_ += static_cast<int64_t>(requeued.size());
  std::set<std::string> dead;
  for (const auto& t : requeued) {
    if (local_worker_gone(t.worker)) dead.insert(t.worker);
  }
  if (impl_->options_.on_dead_worker()) {
    for (const auto& w : dead) impl_->options_.on_dead_worker()(w);
  }
}

void DistributedEngine::claim() {
  for (;;) {
    {
      std::lock_guard lock(impl_->own_mutex_);
      if (impl_->active_ >= impl_->capacity_) return;
    }
    std::optional<Trial> t;
    {
      std::lock_guard claiming(impl_->claim_mutex_);
      t = impl_->storage_->claim_trial(impl_->options_.worker());
      if (!t) return;
      std::lock_guard lock(impl_->own_mutex_);
      impl_->owned_.insert(t->id);
    }
    run_here(*t);
  }
}

void DistributedEngine::loop() {
  auto next_beat = std::chrono::steady_clock::now();
  std::string last_error;
  for (;;) {
    {
      std::lock_guard lock(impl_->loop_mutex_);
      if (impl_->stopping_) return;
    }
    try {
      if (std::chrono::steady_clock::now() >= next_beat) {
        beat_and_reap();
        next_beat =
            std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                   std::chrono::duration<double>(impl_->options_.heartbeat_s()));
      }
      claim();
      sync();
      last_error.clear();
    } catch (const std::exception& e) {  // the storage is unreachable for a while: say so once, go on
      if (last_error != e.what())
        std::fprintf(stderr, "baton: worker %s: %s\n", impl_->options_.worker().c_str(), e.what());
      last_error = e.what();
    }
    std::unique_lock lock(impl_->loop_mutex_);
    impl_->loop_wake_.wait_for(lock, std::chrono::duration<double>(impl_->options_.poll_s()),
                               [&] { return impl_->stopping_ || impl_->woken_; });
    impl_->woken_ = false;
  }
}

}  // namespace baton
