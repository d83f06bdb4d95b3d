// Execution engines: run trials on workers and report what happens as model events.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "baton/exec/trial.h"

namespace baton {

using ModelEventCallback = std::function<void(ModelEvent&)>;

// Thrown by submit() when the search's trial budget is spent (a distributed search whose shared
// storage holds its `limit` trials already): the strategy loop stops submitting.
class BudgetExhausted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What an in-process trial function sees: its parameters, a way to report, and whether it was
// killed (a cooperative flag: a long trial polls should_stop() and returns).
class TrialContext {
 public:
  virtual ~TrialContext() = default;
  virtual int64_t trial_id() const = 0;
  virtual const nlohmann::json& parameters() const = 0;
  virtual void report_intermediate(double value, int64_t step) = 0;
  virtual void report_final(double value) = 0;
  // Several objectives (in the search's order) and the constrained metrics' values.
  virtual void report_values(const std::vector<double>& values, const std::vector<double>& constraints) = 0;
  virtual bool should_stop() const = 0;
};

// Returns normally: Trained (with a final value; without one: Failed). Throws: Failed, with the
// message kept. Killed: Interrupted.
using TrialFunction = std::function<void(TrialContext&)>;

class ExecutionEngine {
 public:
  virtual ~ExecutionEngine() = default;

  // Queues one trial with these parameters; returns its id.
  virtual int64_t submit(const nlohmann::json& parameters) = 0;
  // Blocks until every trial in `ids` (all trials when empty) is completed, or the timeout
  // passes; returns whether they all are. Woken by events, no polling.
  virtual bool wait(const std::vector<int64_t>& ids = {}, std::optional<double> timeout_s = std::nullopt) = 0;
  // Blocks until any one of the unfinished trials completes (or none is left); returns its id.
  virtual std::optional<int64_t> wait_any(std::optional<double> timeout_s = std::nullopt) = 0;
  virtual std::vector<Trial> list(std::optional<TrialStatus> status = std::nullopt) const = 0;
  virtual std::optional<Trial> get(int64_t id) const = 0;
  // Stops a waiting or running trial: it ends Interrupted. Returns false when it had already ended.
  virtual bool kill(int64_t id) = 0;
  virtual int idle_workers() const = 0;
  virtual bool budget_available() const = 0;
  // Runs a failed or interrupted trial again under the same id (through Retrying); false when
  // it cannot (no such trial, not ended, or Trained).
  virtual bool retry(int64_t id) = 0;
  // Adds a trial that is not scheduled (Waiting until an event ends it): for middlewares that
  // answer a submit without running it (Invalid, a replay).
  virtual int64_t add_unscheduled(const nlohmann::json& parameters) = 0;

  virtual int register_callback(ModelEventType type, ModelEventCallback callback) = 0;
  virtual void unregister_callback(int handle) = 0;
  virtual void dispatch(ModelEvent& event) = 0;
  virtual void shutdown() = 0;

  virtual nlohmann::json state_dict() const = 0;
  virtual void load_state_dict(const nlohmann::json& state) = 0;
};

// The part every engine shares: the trial table, listeners, dispatch and waiting. Subclasses run
// trials and call dispatch().
class TrialTable : public ExecutionEngine {
 public:
  TrialTable();
  ~TrialTable() override;
  std::vector<Trial> list(std::optional<TrialStatus> status = std::nullopt) const override;
  std::optional<Trial> get(int64_t id) const override;
  bool wait(const std::vector<int64_t>& ids = {}, std::optional<double> timeout_s = std::nullopt) override;
  std::optional<int64_t> wait_any(std::optional<double> timeout_s = std::nullopt) override;
  bool budget_available() const override { return true; }
  int register_callback(ModelEventType type, ModelEventCallback callback) override;
  void unregister_callback(int handle) override;
  void dispatch(ModelEvent& event) override;
  nlohmann::json state_dict() const override;
  void load_state_dict(const nlohmann::json& state) override;
  bool retry(int64_t id) override;
  int64_t add_unscheduled(const nlohmann::json& parameters) override { return add_trial(parameters); }
  // Queues a trial under an id given from outside (a distributed search's id, from its shared
  // storage). Throws std::invalid_argument when the table has that id already.
  int64_t submit_as(int64_t id, const nlohmann::json& parameters);
  // Runs a Trained trial on under its id (population-based training's next interval): `change`
  // edits it first (its parameters, its exploits); its metrics stay. False when it is not Trained.
  bool continue_trial(int64_t id, const std::function<void(Trial&)>& change);
  // Drops a completed trial from the table (a distributed worker about to run it again after a
  // retry); does nothing for an unknown or unfinished one.
  void forget(int64_t id);
  // The default action: applies the event to its trial.
  void default_callback(ModelEvent& event);
  // Called with a copy of the trial after every change the default action makes (and for each
  // trial added): where storage writes it. Runs in the thread that dispatched the event.
  virtual void set_observer(std::function<void(const Trial&)> observer);

 protected:
  int64_t add_trial(const nlohmann::json& parameters, std::optional<int64_t> id = std::nullopt);
  // Puts a trial this engine did not run (another worker's, read from shared storage) into the
  // table as it is, without events or the observer; a completion wakes wait/wait_any as a local one
  // (with `announce`; without, a trial first seen completed is not handed out by wait_any).
  void sync_trial(const Trial& trial, bool announce = true);
  // Runs the (Retrying or new) trial again when a worker is free.
  virtual void requeue(int64_t id) = 0;
  // The lock over the table's trials (and a subclass's queue), and the wake of its waits.
  std::mutex& table_mutex() const;
  void notify_changed();
  // Under table_mutex(): a trial of the table (std::out_of_range for an unknown id), or null; how many.
  const Trial& trial_locked(int64_t id) const;
  const Trial* find_trial_locked(int64_t id) const;
  std::size_t trial_count_locked() const;
  struct Impl;
  std::unique_ptr<Impl> impl_;

 private:
  void notify_observer(int64_t id);
};

// Runs each trial in the calling thread, inside submit(). One worker.
class SequentialEngine : public TrialTable {
 public:
  ~SequentialEngine() override;
  explicit SequentialEngine(TrialFunction function);
  int64_t submit(const nlohmann::json& parameters) override;
  bool kill(int64_t id) override;
  int idle_workers() const override;
  void shutdown() override {}

 protected:
  void requeue(int64_t id) override;

 private:
  void drain();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The engines whose workers (threads, processes) take trials from a queue: one submit and requeue
// path through it, the kill of a trial still waiting, and the queue's end at shutdown.
class QueuedEngine : public TrialTable {
 public:
  ~QueuedEngine() override;
  int64_t submit(const nlohmann::json& parameters) final;
  bool kill(int64_t id) final;

 protected:
  explicit QueuedEngine(std::string name);
  void requeue(int64_t id) final;
  // Under mutex_: `id` was queued; wake a worker.
  virtual void queued(int64_t id) = 0;
  // Under mutex_: stop `id`, which a worker runs.
  virtual void stop_running(int64_t id) = 0;
  // Takes no more trials and ends every waiting one (interrupted); `under_lock` runs while mutex_
  // is held (to stop the workers). The subclass's shutdown() calls it, then joins its workers.
  void close_queue(const std::function<void()>& under_lock);
  // Under table_mutex(): the trials waiting for a worker, in order; whether shutdown began.
  std::deque<int64_t>& queue_locked();
  const std::deque<int64_t>& queue_locked() const;
  bool shutting_down_locked() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// N worker threads take waiting trials in id order.
class ThreadPoolEngine : public QueuedEngine {
 public:
  ThreadPoolEngine(TrialFunction function, int workers);
  ~ThreadPoolEngine() override;
  int idle_workers() const override;
  void shutdown() override;

 protected:
  void queued(int64_t id) override;
  void stop_running(int64_t id) override;

 private:
  void work();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs one trial function to its end and dispatches its events on `engine` (shared by the engines).
void run_trial_function(ExecutionEngine& engine, const TrialFunction& function, int64_t id,
                        const nlohmann::json& parameters, const std::atomic<bool>& stop);

}  // namespace baton
