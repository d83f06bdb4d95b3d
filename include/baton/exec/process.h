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

#include "baton/exec/engine.h"

namespace baton {

struct ProcessEngineOptions {
  std::string command;  // run with /bin/sh -c
  int workers = 1;
  std::optional<double> timeout_s{};         // per trial run
  double kill_grace_s = 2.0;                 // SIGTERM -> SIGKILL
  std::filesystem::path log_dir{};           // when set: <log_dir>/<id>/stdout.log and stderr.log
  std::map<std::string, std::string> env{};  // added to the trial's environment
};

class ProcessEngine : public TrialTable {
 public:
  explicit ProcessEngine(ProcessEngineOptions options);
  ~ProcessEngine() override;
  int64_t submit(const nlohmann::json& parameters) override;
  bool kill(int64_t id) override;
  int idle_workers() const override;
  void shutdown() override;

 protected:
  void requeue(int64_t id) override;

 private:
  struct Run;
  void monitor();
  void wake();
  void start(int64_t id);
  void finish(int64_t id, Run& run);
  ProcessEngineOptions options_;
  std::deque<int64_t> queue_;
  std::map<int64_t, std::unique_ptr<Run>> running_;  // touched by the monitor thread only
  std::set<int64_t> kill_requests_;
  int active_ = 0;  // started, not yet finished (under mutex_)
  bool shutting_down_ = false;
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
