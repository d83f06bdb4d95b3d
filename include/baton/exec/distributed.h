// DistributedEngine: one worker of a search shared by processes on one or several machines
// through a TrialStorage (SQLite on one machine, PostgreSQL across machines).
//
// Every worker runs the same strategy loop. A trial it submits is created in the storage (the
// storage numbers trials and enforces the search's trial limit) and run by its local engine; a
// trial left by another worker (requeued after its worker stopped beating, or given back for a
// retry) is claimed in a transaction, so no trial is run twice. While a trial runs, its worker
// renews a heartbeat; a trial whose worker stays silent longer than `stale_after_s` is requeued
// for any worker, and taken back by its own worker if that one returns before another claims it.
// Other workers' trials appear in list()/get() and their completions wake wait_any() (read from
// the storage every `poll_s`), so each worker's strategy learns from all results.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "baton/core/options.h"
#include "baton/exec/engine.h"
#include "baton/exec/storage.h"

namespace baton {

class DistributedOptions {
  BATON_ARG(std::string, worker);         // this worker's name; default "host:pid"
  BATON_ARG(int64_t, limit) = INT64_MAX;  // trials in the whole search
  BATON_ARG(double, heartbeat_s) = 2.0;
  BATON_ARG(double, stale_after_s) = 20.0;  // a running trial's worker is silent this long: requeued
  BATON_ARG(double, poll_s) = 0.25;         // how often other workers' changes are read
  // Called for a worker on this machine found dead while it owned trials (to stop its orphans).
  BATON_ARG(std::function<void(const std::string& worker)>, on_dead_worker);
};

class DistributedEngine : public TrialTable {
 public:
  // `local` runs this worker's trials (a ProcessEngine or a ThreadPoolEngine, not shared).
  DistributedEngine(std::shared_ptr<TrialStorage> storage, std::shared_ptr<TrialTable> local,
                    DistributedOptions options);
  ~DistributedEngine() override;
  DistributedEngine(const DistributedEngine&) = delete;
  DistributedEngine& operator=(const DistributedEngine&) = delete;

  // Creates the trial in the storage and runs it here. Throws BudgetExhausted at the limit.
  int64_t submit(const nlohmann::json& parameters) override;
  // This worker's trials, and trials still waiting in the queue; false for another worker's.
  bool kill(int64_t id) override;
  int idle_workers() const override;
  bool budget_available() const override;
  int64_t add_unscheduled(const nlohmann::json& parameters) override;
  void set_observer(std::function<void(const Trial&)> observer) override;
  void shutdown() override;
  void load_state_dict(const nlohmann::json& state) override;  // the state is the storage: refused

  const std::string& worker() const;
  // Trials of silent workers this worker put back in the queue.
  int64_t requeued() const;

 protected:
  void requeue(int64_t id) override;

 private:
  void loop();
  void sync(bool announce = true);
  void beat_and_reap();
  void claim();
  void forward(ModelEvent& event);
  bool owns(int64_t id) const;
  // A new trial in the storage, this worker's from the start; BudgetExhausted at the limit.
  Trial create_owned(const nlohmann::json& parameters);
  void run_here(const Trial& trial);
  void wake();

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::function<void(const Trial&)> user_observer_;
};

// "host:pid" of this process.
std::string default_worker_name();
// Whether a worker named "host:pid" was on this machine and its process is gone.
bool local_worker_gone(const std::string& worker);

}  // namespace baton
