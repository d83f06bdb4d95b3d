// ProcessEngine: each trial is a command, N at once. The trial protocol:
//  - in: environment variables BATON_TRIAL_PARAMETERS (a JSON object) and BATON_TRIAL_ID;
//  - out: lines `baton: {"intermediate": 0.71, "step": 3}` and `baton: {"final": 0.93}` on stdout;
//    with several objectives `{"final": [0.93, 120000]}` (in the search's order), and the
//    constrained metrics' values `{"final": 0.93, "constraints": [12.5]}`; a run population-based
//    training stopped at its interval's end adds `"paused": true`.
// Exit 0 with a final value: Trained. Otherwise Failed (exit status or signal, with the tail of
// stderr); past its timeout: Failed ("timed out"); kill(): Interrupted. The process group gets
// SIGTERM, then SIGKILL after a grace period. One thread waits on all pipes with poll(): events
// arrive as the lines are printed, with no polling interval.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "baton/core/options.h"
#include "baton/exec/engine.h"

namespace baton {

// A share of the machine one trial at a time runs on: its devices (the trial sees only them:
// CUDA_VISIBLE_DEVICES, and BATON_TRIAL_DEVICES), its CPU threads (OMP_NUM_THREADS,
// MKL_NUM_THREADS, BATON_TRIAL_THREADS) and the cores it may run on (its process's CPU affinity,
// BATON_TRIAL_CPUS). Each empty or 0: not set.
struct TrialSlot {
  std::vector<std::string> devices;
  int threads = 0;
  std::vector<int> cpus;
};

// The slots of `devices` taken `per_trial` at a time (4 devices, 2 per trial: {0,1} and {2,3}) and,
// with `threads` > 0, each with that many threads on cores of its own (slot i: the i-th `threads`
// of `cpus`), for `count` slots (the number of device slots when devices are given). Throws
// std::invalid_argument, naming the flag, for a device named twice, per_trial < 1 or larger than
// the list, and threads * count over the cpus there are.
std::vector<TrialSlot> make_trial_slots(const std::vector<std::string>& devices, int per_trial, int threads, int count,
                                        const std::vector<int>& cpus);
// The CPUs this process may run on (its affinity), in order.
std::vector<int> usable_cpus();

class ProcessEngineOptions {
 public:
  using Env = std::map<std::string, std::string>;

  BATON_ARG(std::string, command);  // run with /bin/sh -c
  BATON_ARG(int, workers) = 1;
  // When given: a trial runs in a free slot (at most one trial in each; one that ends, however it
  // ends, frees its slot), and at most slots.size() run at once.
  BATON_ARG(std::vector<TrialSlot>, slots);
  BATON_ARG(std::optional<double>, timeout_s);  // per trial run
  BATON_ARG(double, kill_grace_s) = 2.0;        // SIGTERM -> SIGKILL
  BATON_ARG(std::filesystem::path, log_dir);    // when set: <log_dir>/<id>/stdout.log and stderr.log
  BATON_ARG(Env, env);                          // added to the trial's environment
  // More of it for one trial run, asked for as it starts (population-based training's interval end).
  BATON_ARG(std::function<Env(int64_t)>, trial_env);
  // How many final values a trial reports (its objectives) and constrained metrics: a final line
  // with another count fails the trial, saying what was expected.
  BATON_ARG(std::size_t, objectives) = 1;
  BATON_ARG(std::size_t, constraints) = 0;
};

class ProcessEngine : public QueuedEngine {
 public:
  explicit ProcessEngine(ProcessEngineOptions options);
  ~ProcessEngine() override;
  int idle_workers() const override;
  void shutdown() override;

 protected:
  void queued(int64_t id) override;
  void stop_running(int64_t id) override;

 private:
  struct Run;
  void monitor();
  // Starts what fits, takes kill requests, signals the trials to stop (SIGTERM, then SIGKILL after
  // the grace); true once the engine shuts down.
  bool start_and_signal();
  // Waits (poll) for a running trial's output, its next deadline or a wake-up: (trial, stdout?) of
  // each pipe with something to read.
  std::vector<std::pair<int64_t, bool>> wait_for_output();
  // Reads once from one of the trial's pipes; true when both are closed (the trial has ended).
  bool read_output(int64_t id, Run& run, bool is_stdout, std::vector<char>& buffer);
  // One stdout line: a protocol line becomes the trial's metric event.
  void report(int64_t id, Run& run, const std::string& line);
  void wake();
  void start(int64_t id);
  void finish(int64_t id, Run& run);
  void reap_exited(std::vector<int64_t>& done);
  void dispatch_or_log(int64_t id, ModelEvent& event);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The trial processes (and their children) of a search worker that died: every process of this
// user whose environment has BATON_SEARCH_WORKER=<worker> (a search sets it for its trials) gets
// SIGKILL. Returns how many. Linux (/proc); elsewhere 0.
int kill_worker_processes(const std::string& worker);

// Parses one stdout line of the trial protocol: nullopt when it is not a `baton:` line; throws
// std::invalid_argument when it is one but malformed.
std::optional<nlohmann::json> parse_protocol_line(const std::string& line);

}  // namespace baton
