// ProcessEngine: each trial is a command, N at once. The trial protocol:
//  - in: environment variables BATON_TRIAL_PARAMETERS (a JSON object) and BATON_TRIAL_ID;
//  - out: lines `baton: {"intermediate": 0.71, "step": 3}` and `baton: {"final": 0.93}` on stdout.
// Exit 0 with a final value: Trained. Otherwise Failed (exit status or signal, with the tail of
// stderr); past its timeout: Failed ("timed out"); kill(): Interrupted. The process group gets
// SIGTERM, then SIGKILL after a grace period. One thread waits on all pipes with poll(): events
// arrive as the lines are printed, with no polling interval.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "baton/core/options.h"
#include "baton/exec/engine.h"

namespace baton {

class ProcessEngineOptions {
 public:
  using Env = std::map<std::string, std::string>;

  BATON_ARG(std::string, command);  // run with /bin/sh -c
  BATON_ARG(int, workers) = 1;
  BATON_ARG(std::optional<double>, timeout_s);  // per trial run
  BATON_ARG(double, kill_grace_s) = 2.0;        // SIGTERM -> SIGKILL
  BATON_ARG(std::filesystem::path, log_dir);    // when set: <log_dir>/<id>/stdout.log and stderr.log
  BATON_ARG(Env, env);                          // added to the trial's environment
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
  ProcessEngineOptions options_;
  std::map<int64_t, std::unique_ptr<Run>> running_;  // touched by the monitor thread only
  std::set<int64_t> kill_requests_;
  int active_ = 0;  // started, not yet finished (under mutex_)
  int wake_pipe_[2] = {-1, -1};
  std::thread monitor_;
};

// The trial processes (and their children) of a search worker that died: every process of this
// user whose environment has BATON_SEARCH_WORKER=<worker> (a search sets it for its trials) gets
// SIGKILL. Returns how many. Linux (/proc); elsewhere 0.
int kill_worker_processes(const std::string& worker);

// Parses one stdout line of the trial protocol: nullopt when it is not a `baton:` line; throws
// std::invalid_argument when it is one but malformed.
std::optional<nlohmann::json> parse_protocol_line(const std::string& line);

}  // namespace baton
