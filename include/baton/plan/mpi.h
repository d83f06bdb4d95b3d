// MpiSession: runs a TaskGroup with its nodes spread over the ranks of an MPI job. Every rank
// builds the same group and calls run(); each rank runs the combined tasks of its nodes on its own
// LocalSession pool; the outputs of every node are gathered to rank 0 (and to every rank with
// broadcast_outputs). A step that fails on one rank cancels the steps on every other rank, and
// run() throws the same PlanError on every rank, naming the rank, node, task and step that failed.
//
//   mpirun -np 3 build/bin/plan_example --session mpi      (srun -n 3 ... under Slurm)
//
// Without mpirun the process is a job of one rank. Nodes keep their Global workspaces across runs
// on the rank that runs them.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "baton/core/options.h"
#include "baton/plan/session.h"

namespace baton {

class MpiSessionOptions {
 public:
  using NodeRanks = std::map<std::string, int>;

  // Nodes placed on a rank by name; the others go round-robin (in the group's node order) over
  // all ranks.
  BATON_ARG(NodeRanks, node_ranks);
  BATON_ARG(bool, broadcast_outputs) = false;
  BATON_ARG(int, threads) = 0;  // of each rank's pool (0: the machine's cores / ranks on this machine)
};

class MpiSession {
 public:
  // Initialises MPI when nothing has (finalised at exit). Throws std::runtime_error when baton was
  // built without MPI.
  explicit MpiSession(MpiSessionOptions options = MpiSessionOptions());
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const;
  int size() const;
  // The rank that runs `node` in `group` (its tasks_by_node() order).
  int rank_of(TaskGroup& group, const std::string& node) const;
  // On every rank at once (a collective call). Outputs are ready on rank 0 (on every rank with
  // broadcast_outputs; elsewhere only those of the rank's own nodes).
  void run(TaskGroup& group);
  // This rank's workspace for a node it runs.
  std::shared_ptr<Workspace> node_workspace(const std::string& node);

  static bool built();     // baton was compiled with MPI
  static bool launched();  // started by mpirun/mpiexec/srun

 private:
  std::vector<int> place(const TaskGroup& by_node) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
