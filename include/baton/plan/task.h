// Task groups on named nodes (Caffe2's task model): tasks grouped by node, started together and
// finished when the last one finishes; tasks on one node share a workspace, tasks on different
// nodes do not; setup and exit at task, instance and node level; periodic report steps; outputs
// fetched by the caller after the run. A session (session.h) runs a TaskGroup.
//
//   baton::TaskGroup group;
//   group.add(baton::Task(s1));                // node "local"
//   {
//     baton::Node n1("n1");                    // new tasks go to n1 while `n1` lives
//     baton::Task t(s2, baton::TaskOptions().name("count").num_instances(2));
//     auto total = t.add_output("total");
//     group.add(std::move(t));
//   }
//   baton::LocalSession().run(group);
//   total->get();                              // the value of "total" in n1's workspace at the end
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/options.h"
#include "baton/plan/workspace.h"

namespace baton {

// ---- nodes ------------------------------------------------------------------------------------

// The node names used, in first-use order, and each node's implementation-specific properties
// (e.g. the cores or memory a node needs). A default cluster exists; a Cluster object made current
// with Cluster::Scope collects names instead.
class Cluster {
 public:
  Cluster();
  ~Cluster();
  void add_node(const std::string& name, const nlohmann::json& properties = nlohmann::json::object());
  std::vector<std::string> nodes() const;
  nlohmann::json node_properties(const std::string& name) const;  // {} when none
  static Cluster& current();
  class Scope {
   public:
    explicit Scope(Cluster& cluster);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Cluster* previous_;
  };

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// While a Node lives, new tasks in this thread are placed on it (the default is "local").
// Properties are merged into the current Cluster's record of the node.
class Node {
 public:
  explicit Node(std::string name = "local", const nlohmann::json& properties = nlohmann::json::object());
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  const std::string& name() const { return name_; }
  static std::string current();  // the innermost live Node's name in this thread, else "local"

 private:
  std::string name_;
  const Node* previous_;
};

// ---- steps ------------------------------------------------------------------------------------

class StepContext;
using StepFunction = std::function<void(StepContext&)>;

enum class SetupScope { kTask, kInstance, kNode };

// Code that runs once before and once after: per task (around all its instances, in the task's
// workspace), per task instance (in the instance's workspace), or per node per group run. The
// same StepSetup attached to several steps runs once per task or group run. An exit runs when its
// init ran, even after a failure.
struct StepSetup {
  std::function<void(Workspace&)> init{};
  std::function<void(Workspace&)> exit{};
};

// Substeps or a function over the workspace, and how to run them.
class ExecutionStep : public std::enable_shared_from_this<ExecutionStep> {
 public:
  ~ExecutionStep();
  ExecutionStep(const ExecutionStep&) = delete;
  ExecutionStep& operator=(const ExecutionStep&) = delete;
  static std::shared_ptr<ExecutionStep> make(std::string name, StepFunction function);
  static std::shared_ptr<ExecutionStep> make(std::string name, std::vector<std::shared_ptr<ExecutionStep>> substeps);
  // `body` between the setups' inits (in order) and their exits (in reverse); an exit runs when its
  // init ran, even when the body failed or was cancelled.
  static std::shared_ptr<ExecutionStep> guarded(std::string name, std::vector<std::shared_ptr<StepSetup>> setups,
                                                std::shared_ptr<ExecutionStep> body);
  const std::vector<std::shared_ptr<StepSetup>>& guards() const;
  // Set on the root of Task::step_with_setup(): steps under it run as that task ("node/name").
  const std::string& task_name() const;

  const std::string& name() const;
  const StepFunction& function() const;
  const std::vector<std::shared_ptr<ExecutionStep>>& substeps() const;

  // Run the body this many times (default once; with should_stop and no num_iter: until it stops).
  ExecutionStep& num_iter(int64_t n);
  // Substeps run at once (on the session's pool) instead of one after another.
  ExecutionStep& concurrent_substeps(bool on = true);
  // Checked before every iteration: a predicate, or a boolean value in the workspace.
  ExecutionStep& should_stop(std::function<bool(const Workspace&)> predicate);
  ExecutionStep& should_stop_flag(std::string name);
  // Runs once per task run even when an enclosing step loops.
  ExecutionStep& only_once(bool on = true);
  // Among concurrent siblings: runs every `ms` while the others run, and once more after they end.
  ExecutionStep& run_every_ms(int64_t ms);
  // N copies of the body at once, each in a child workspace.
  ExecutionStep& num_concurrent_instances(int n);
  // The body runs in a child workspace of the one it is given.
  ExecutionStep& create_workspace(bool on = true);
  ExecutionStep& add_setup(SetupScope scope, std::shared_ptr<StepSetup> setup);

  std::optional<int64_t> iterations() const;
  bool is_concurrent() const;
  bool is_only_once() const;
  std::optional<int64_t> every_ms() const;
  int instances() const;
  bool creates_workspace() const;
  bool stops(const Workspace& ws) const;
  bool has_stop_condition() const;
  // This step's and its substeps' setups of a scope, each once, in the order found.
  std::vector<std::shared_ptr<StepSetup>> setups(SetupScope scope) const;

 private:
  ExecutionStep();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend class Task;
};

// What a step function sees.
class StepContext {
 public:
  virtual ~StepContext() = default;
  virtual Workspace& workspace() = 0;
  virtual const std::string& node() const = 0;
  virtual const std::string& task() const = 0;
  virtual int instance() const = 0;       // 0..num_instances-1
  virtual int64_t iteration() const = 0;  // of the innermost looping step
  // True once a sibling failed or the session is stopping: a long step polls it and returns.
  virtual bool cancelled() const = 0;
};

// ---- tasks and groups -------------------------------------------------------------------------

enum class WorkspaceType {
  kPrivate,  // a child of the node's workspace per run, discarded after it
  kGlobal,   // the node's workspace itself, kept across runs
};

// One output of a task: the values of workspace names at the end of the run on the task's node.
class TaskOutput {
 public:
  ~TaskOutput();
  explicit TaskOutput(std::vector<std::string> names);
  const std::vector<std::string>& names() const;
  bool ready() const;
  // The value (one name) or the first of them; throws std::logic_error before the run ends.
  WorkspaceValue get() const;
  std::vector<WorkspaceValue> get_all() const;
  void set(std::vector<WorkspaceValue> values);  // by the session

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class TaskOptions {
  BATON_ARG(std::string, name);  // default: the step's name, else "task"
  BATON_ARG(int, num_instances) = 1;
  BATON_ARG(std::optional<WorkspaceType>, workspace_type);
  BATON_ARG(std::optional<std::string>, node);  // default: Node::current()
};

class Task {
 public:
  explicit Task(std::shared_ptr<ExecutionStep> step = nullptr, TaskOptions options = TaskOptions());
  Task(const Task& other);
  Task& operator=(const Task& other);
  Task(Task&&) noexcept;
  Task& operator=(Task&&) noexcept;
  ~Task();
  const std::string& name() const;  // "node/name", unique in its group once added
  const std::string& node() const;
  int num_instances() const;
  std::optional<WorkspaceType> workspace_type() const;
  const std::shared_ptr<ExecutionStep>& step() const;
  std::shared_ptr<TaskOutput> add_output(const std::string& name);
  std::shared_ptr<TaskOutput> add_output(std::vector<std::string> names);
  const std::vector<std::shared_ptr<TaskOutput>>& outputs() const;
  // The step with its task and instance setups and its instances: what a session runs.
  std::shared_ptr<ExecutionStep> step_with_setup() const;

  // While a Scope lives, final_output() adds to this task.
  class Scope {
   public:
    explicit Scope(Task& task);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Task* previous_;
  };
  static Task* current();

 private:
  friend class TaskGroup;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Adds an output to the current task (Task::Scope); throws std::logic_error without one.
std::shared_ptr<TaskOutput> final_output(const std::string& name);

// Tasks that start together and finish when the last one does.
class TaskGroup {
 public:
  ~TaskGroup();
  TaskGroup(const TaskGroup& other);
  TaskGroup& operator=(const TaskGroup& other);
  TaskGroup(TaskGroup&&) noexcept;
  TaskGroup& operator=(TaskGroup&&) noexcept;
  explicit TaskGroup(std::optional<WorkspaceType> workspace_type = std::nullopt);
  // Names the task "node/name", then "node/name:1", ... when the name is taken on its node.
  // A task whose workspace type disagrees with the group's is refused (std::invalid_argument).
  Task& add(Task task);
  const std::vector<Task>& tasks() const;
  std::vector<std::string> used_nodes() const;  // in first-use order
  // A step run every `interval_ms` on `node` while the group runs there, and once after its tasks end.
  void report_step(std::shared_ptr<ExecutionStep> step, const std::string& node = Node::current(),
                   int64_t interval_ms = 1000);
  WorkspaceType workspace_type() const;
  // One combined task per (remapped) node: its node setups, report steps and tasks, concurrently.
  // Callable once; again only with the same mapping (std::logic_error otherwise).
  const TaskGroup& tasks_by_node(const std::function<std::string(const std::string&)>& remap = {});
  // Everything as one task on `node` (default: the current node).
  Task to_task(const std::string& node = Node::current());

 private:
  // tasks_by_node, step by step: each node used (tasks, report steps) and where `remap` puts it; the
  // one task of a mapped node.
  std::map<std::string, std::string> node_map(const std::function<std::string(const std::string&)>& remap) const;
  Task node_task(const std::string& node, const std::map<std::string, std::string>& map) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
