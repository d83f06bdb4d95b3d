// Sessions run a TaskGroup: LocalSession runs every node in this process on one fixed pool of
// threads; MpiSession (mpi.h) maps nodes to MPI ranks.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "baton/core/options.h"
#include "baton/plan/task.h"

namespace baton {

// The one error a failed run reports: the first step that threw, with its task and node.
class PlanError : public std::runtime_error {
 public:
  // `rank`: the MPI rank it happened on (-1: none, a LocalSession).
  PlanError(std::string node, std::string task, std::string step, const std::string& what, int rank = -1);
  const std::string& node() const { return node_; }
  int rank() const { return rank_; }
  const std::string& what_happened() const { return what_; }  // the cause alone
  const std::string& task() const { return task_; }
  const std::string& step() const { return step_; }

 private:
  std::string node_, task_, step_, what_;
  int rank_ = -1;
};

namespace detail {
class Executor;
class Ticker;
struct Run;
}  // namespace detail

class LocalSessionOptions {
  BATON_ARG(int, threads) = 0;  // the pool's workers; 0: one per core
};

class LocalSession {
 public:
  // A pool of `threads` workers. Steps never get a thread of their own: concurrent substeps and
  // instances are jobs on this pool (a thread that waits for its substeps runs queued jobs
  // meanwhile), and every report step runs on the session's one timer thread.
  explicit LocalSession(LocalSessionOptions options = {});
  // LocalSession(LocalSessionOptions().threads(threads)), as Caffe2's spelling has it.
  explicit LocalSession(int threads) : LocalSession(LocalSessionOptions().threads(threads)) {}
  ~LocalSession();
  LocalSession(const LocalSession&) = delete;
  LocalSession& operator=(const LocalSession&) = delete;

  // Runs the group to its end and fills its tasks' outputs. When a step throws, its siblings are
  // cancelled (jobs not started are skipped, running ones see StepContext::cancelled()), exits of
  // setups that ran still run, and the run throws one PlanError naming the task and node.
  void run(TaskGroup& group);
  // Runs combined node tasks (from tasks_by_node) at once, each in this session's workspace for
  // its node; what MpiSession does on each rank. Returns the first error instead of throwing.
  std::optional<PlanError> run_nodes(const std::vector<const Task*>& combined);
  // True while a run is going and one of its steps failed (or cancel() was called).
  bool failing() const;
  // A node's workspace, kept across runs (what Global tasks use; Private runs see it as parent).
  std::shared_ptr<Workspace> node_workspace(const std::string& node);
  // Asks a running group to stop (from another thread): as if a step had failed; the run's error
  // (no task, no node) says `why`.
  void cancel(const std::string& why = "cancelled");
  int threads() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
