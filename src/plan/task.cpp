#include "baton/plan/task.h"

#include <algorithm>
#include <memory>
#include <set>
#include <stdexcept>

namespace baton {

// ---- Cluster and Node -----------------------------------------------------------------------

namespace {
Cluster& default_cluster() {
  static Cluster cluster;
  return cluster;
}
thread_local Cluster* current_cluster = nullptr;
thread_local const Node* current_node = nullptr;
thread_local Task* current_task = nullptr;
}  // namespace

struct Cluster::Impl {
  mutable std::mutex mutex_;
  std::vector<std::string> nodes_;
  std::map<std::string, nlohmann::json> properties_;
};

Cluster::Cluster() : impl_(std::make_unique<Impl>()) {}
Cluster::~Cluster() = default;

void Cluster::add_node(const std::string& name, const nlohmann::json& properties) {
  std::lock_guard lock(impl_->mutex_);
  if (std::find(impl_->nodes_.begin(), impl_->nodes_.end(), name) == impl_->nodes_.end()) impl_->nodes_.push_back(name);
  auto& p = impl_->properties_[name];
  if (!p.is_object()) p = nlohmann::json::object();
  if (properties.is_object()) p.update(properties);
}

std::vector<std::string> Cluster::nodes() const {
  std::lock_guard lock(impl_->mutex_);
  return impl_->nodes_;
}

nlohmann::json Cluster::node_properties(const std::string& name) const {
  std::lock_guard lock(impl_->mutex_);
  auto it = impl_->properties_.find(name);
  return it == impl_->properties_.end() ? nlohmann::json::object() : it->second;
}

Cluster& Cluster::current() { return current_cluster ? *current_cluster : default_cluster(); }

Cluster::Scope::Scope(Cluster& cluster) : previous_(current_cluster) { current_cluster = &cluster; }
Cluster::Scope::~Scope() { current_cluster = previous_; }

Node::Node(std::string name, const nlohmann::json& properties) : name_(std::move(name)), previous_(current_node) {
  if (name_.empty()) throw std::invalid_argument("Node: a node needs a name");
  Cluster::current().add_node(name_, properties);
  current_node = this;
}

Node::~Node() { current_node = previous_; }

std::string Node::current() { return current_node ? current_node->name_ : "local"; }

// ---- ExecutionStep ----------------------------------------------------------------------------

struct ExecutionStep::Impl {
  std::string name_;
  StepFunction function_;
  std::vector<std::shared_ptr<ExecutionStep>> substeps_;
  std::optional<int64_t> num_iter_;
  bool concurrent_ = false;
  std::function<bool(const Workspace&)> stop_predicate_;
  std::string stop_flag_;
  bool only_once_ = false;
  std::optional<int64_t> run_every_ms_;
  int instances_ = 1;
  bool create_workspace_ = false;
  std::vector<std::pair<SetupScope, std::shared_ptr<StepSetup>>> setups_;
  std::vector<std::shared_ptr<StepSetup>> guards_;
  std::string task_name_;
};

ExecutionStep::ExecutionStep() : impl_(std::make_unique<Impl>()) {}
ExecutionStep::~ExecutionStep() = default;

const std::vector<std::shared_ptr<StepSetup>>& ExecutionStep::guards() const { return impl_->guards_; }
const std::string& ExecutionStep::task_name() const { return impl_->task_name_; }
const std::string& ExecutionStep::name() const { return impl_->name_; }
const StepFunction& ExecutionStep::function() const { return impl_->function_; }
const std::vector<std::shared_ptr<ExecutionStep>>& ExecutionStep::substeps() const { return impl_->substeps_; }
std::optional<int64_t> ExecutionStep::iterations() const { return impl_->num_iter_; }
bool ExecutionStep::is_concurrent() const { return impl_->concurrent_; }
bool ExecutionStep::is_only_once() const { return impl_->only_once_; }
std::optional<int64_t> ExecutionStep::every_ms() const { return impl_->run_every_ms_; }
int ExecutionStep::instances() const { return impl_->instances_; }
bool ExecutionStep::creates_workspace() const { return impl_->create_workspace_; }
bool ExecutionStep::has_stop_condition() const {
  return static_cast<bool>(impl_->stop_predicate_) || !impl_->stop_flag_.empty();
}

std::shared_ptr<ExecutionStep> ExecutionStep::make(std::string name, StepFunction function) {
  auto s = std::shared_ptr<ExecutionStep>(new ExecutionStep());
  s->impl_->name_ = std::move(name);
  s->impl_->function_ = std::move(function);
  return s;
}

std::shared_ptr<ExecutionStep> ExecutionStep::make(std::string name,
                                                   std::vector<std::shared_ptr<ExecutionStep>> substeps) {
  auto s = std::shared_ptr<ExecutionStep>(new ExecutionStep());
  s->impl_->name_ = std::move(name);
  for (const auto& sub : substeps) {
    if (!sub) throw std::invalid_argument("ExecutionStep '" + s->impl_->name_ + "': a substep is null");
  }
  s->impl_->substeps_ = std::move(substeps);
  return s;
}

std::shared_ptr<ExecutionStep> ExecutionStep::guarded(std::string name, std::vector<std::shared_ptr<StepSetup>> setups,
                                                      std::shared_ptr<ExecutionStep> body) {
  auto s = make(std::move(name), std::vector<std::shared_ptr<ExecutionStep>>{std::move(body)});
  s->impl_->guards_ = std::move(setups);
  return s;
}

ExecutionStep& ExecutionStep::num_iter(int64_t n) {
  if (n < 0) throw std::invalid_argument("ExecutionStep '" + impl_->name_ + "': num_iter < 0");
  impl_->num_iter_ = n;
  return *this;
}
ExecutionStep& ExecutionStep::concurrent_substeps(bool on) {
  impl_->concurrent_ = on;
  return *this;
}
ExecutionStep& ExecutionStep::should_stop(std::function<bool(const Workspace&)> predicate) {
  impl_->stop_predicate_ = std::move(predicate);
  return *this;
}
ExecutionStep& ExecutionStep::should_stop_flag(std::string name) {
  impl_->stop_flag_ = std::move(name);
  return *this;
}
ExecutionStep& ExecutionStep::only_once(bool on) {
  impl_->only_once_ = on;
  return *this;
}
ExecutionStep& ExecutionStep::run_every_ms(int64_t ms) {
  if (ms <= 0) throw std::invalid_argument("ExecutionStep '" + impl_->name_ + "': run_every_ms must be > 0");
  impl_->run_every_ms_ = ms;
  return *this;
}
ExecutionStep& ExecutionStep::num_concurrent_instances(int n) {
  if (n < 1) throw std::invalid_argument("ExecutionStep '" + impl_->name_ + "': num_concurrent_instances < 1");
  impl_->instances_ = n;
  return *this;
}
ExecutionStep& ExecutionStep::create_workspace(bool on) {
  impl_->create_workspace_ = on;
  return *this;
}
ExecutionStep& ExecutionStep::add_setup(SetupScope scope, std::shared_ptr<StepSetup> setup) {
  if (!setup) throw std::invalid_argument("ExecutionStep '" + impl_->name_ + "': null setup");
  impl_->setups_.emplace_back(scope, std::move(setup));
  return *this;
}

bool ExecutionStep::stops(const Workspace& ws) const {
  if (impl_->stop_predicate_ && impl_->stop_predicate_(ws)) return true;
  if (!impl_->stop_flag_.empty()) {
    auto v = ws.get(impl_->stop_flag_);
    if (v) {
      if (const bool* b = std::get_if<bool>(&*v)) return *b;
      if (const int64_t* i = std::get_if<int64_t>(&*v)) return *i != 0;
      if (const double* d = std::get_if<double>(&*v)) return *d != 0;
    }
  }
  return false;
}

std::vector<std::shared_ptr<StepSetup>> ExecutionStep::setups(SetupScope scope) const {
  std::vector<std::shared_ptr<StepSetup>> out;
  if (impl_->substeps_.empty()) {  // a leaf (most tasks): no walk, no sets
    for (const auto& [sc, setup] : impl_->setups_) {
      if (sc == scope && std::find(out.begin(), out.end(), setup) == out.end()) out.push_back(setup);
    }
    return out;
  }
  std::set<const StepSetup*> seen;
  std::set<const ExecutionStep*> visited;
  std::function<void(const ExecutionStep&)> walk = [&](const ExecutionStep& s) {
    if (!visited.insert(&s).second) return;
    for (const auto& [sc, setup] : s.impl_->setups_) {
      if (sc == scope && seen.insert(setup.get()).second) out.push_back(setup);
    }
    for (const auto& sub : s.impl_->substeps_) walk(*sub);
  };
  walk(*this);
  return out;
}

// ---- TaskOutput and Task ----------------------------------------------------------------------

struct TaskOutput::Impl {
  std::vector<std::string> names_;
  std::vector<WorkspaceValue> values_;
  std::atomic<bool> ready_{false};
};

TaskOutput::~TaskOutput() = default;

const std::vector<std::string>& TaskOutput::names() const { return impl_->names_; }
bool TaskOutput::ready() const { return impl_->ready_; }

TaskOutput::TaskOutput(std::vector<std::string> names) : impl_(std::make_unique<Impl>()) {
  impl_->names_ = std::move(names);
  if (impl_->names_.empty()) throw std::invalid_argument("TaskOutput: no names");
}

WorkspaceValue TaskOutput::get() const { return get_all().at(0); }

std::vector<WorkspaceValue> TaskOutput::get_all() const {
  if (!impl_->ready_)
    throw std::logic_error("TaskOutput '" + impl_->names_[0] + "': the run has not ended (or failed)");
  return impl_->values_;
}

void TaskOutput::set(std::vector<WorkspaceValue> values) {
  impl_->values_ = std::move(values);
  impl_->ready_ = true;
}

struct Task::Impl {
  std::shared_ptr<ExecutionStep> step_;
  TaskOptions options_;
  std::string name_;
  std::string node_;
  std::vector<std::shared_ptr<TaskOutput>> outputs_;
};

Task::Task(std::shared_ptr<ExecutionStep> step, TaskOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->step_ = std::move(step);
  impl_->options_ = std::move(options);
  if (impl_->options_.num_instances() < 1)
    throw std::invalid_argument("Task '" + impl_->options_.name() + "': num_instances < 1");
  if (impl_->options_.name().empty()) impl_->options_.name(impl_->step_ ? impl_->step_->name() : "task");
  if (impl_->options_.node()) Cluster::current().add_node(*impl_->options_.node());
  impl_->node_ = impl_->options_.node().value_or(Node::current());
  if (!impl_->options_.node() && impl_->node_ == "local") Cluster::current().add_node(impl_->node_);
  impl_->name_ = impl_->node_ + "/" + impl_->options_.name();
}

Task::Task(const Task& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
Task& Task::operator=(const Task& other) {
  if (this != &other) impl_ = std::make_unique<Impl>(*other.impl_);
  return *this;
}
Task::Task(Task&&) noexcept = default;
Task& Task::operator=(Task&&) noexcept = default;
Task::~Task() = default;

const std::string& Task::name() const { return impl_->name_; }
const std::string& Task::node() const { return impl_->node_; }
int Task::num_instances() const { return impl_->options_.num_instances(); }
std::optional<WorkspaceType> Task::workspace_type() const { return impl_->options_.workspace_type(); }
const std::shared_ptr<ExecutionStep>& Task::step() const { return impl_->step_; }
const std::vector<std::shared_ptr<TaskOutput>>& Task::outputs() const { return impl_->outputs_; }

std::shared_ptr<TaskOutput> Task::add_output(const std::string& name) {
  return add_output(std::vector<std::string>{name});
}

std::shared_ptr<TaskOutput> Task::add_output(std::vector<std::string> names) {
  impl_->outputs_.push_back(std::make_shared<TaskOutput>(std::move(names)));
  return impl_->outputs_.back();
}

std::shared_ptr<ExecutionStep> Task::step_with_setup() const {
  auto body =
      impl_->step_ ? impl_->step_ : ExecutionStep::make(impl_->name_, std::vector<std::shared_ptr<ExecutionStep>>{});
  auto instance_setups = body->setups(SetupScope::kInstance);
  // Without instance setups the instance is the body itself (one step less per task).
  auto instance = instance_setups.empty()
                      ? body
                      : ExecutionStep::guarded(impl_->name_ + ":instance", std::move(instance_setups), body);
  if (impl_->options_.num_instances() > 1) {
    instance = ExecutionStep::make(impl_->name_ + ":parallel", std::vector<std::shared_ptr<ExecutionStep>>{instance});
    instance->num_concurrent_instances(impl_->options_.num_instances());
  }
  auto root = ExecutionStep::guarded(impl_->name_, body->setups(SetupScope::kTask), instance);
  root->impl_->task_name_ = impl_->name_;
  return root;
}

Task::Scope::Scope(Task& task) : previous_(current_task) { current_task = &task; }
Task::Scope::~Scope() { current_task = previous_; }
Task* Task::current() { return current_task; }

std::shared_ptr<TaskOutput> final_output(const std::string& name) {
  if (!current_task) throw std::logic_error("final_output('" + name + "'): no current task (use Task::Scope)");
  return current_task->add_output(name);
}

// ---- TaskGroup --------------------------------------------------------------------------------

struct TaskGroup::Impl {
  std::optional<WorkspaceType> workspace_type_;
  std::vector<Task> tasks_;
  std::set<std::string> names_;             // of the tasks, for unique names in O(log n)
  std::map<std::string, int> next_suffix_;  // per "node/name": the last suffix given
  std::vector<std::pair<std::string, std::shared_ptr<ExecutionStep>>> report_steps_;
  std::shared_ptr<TaskGroup> by_node_;
  std::map<std::string, std::string> by_node_map_;
};

TaskGroup::~TaskGroup() = default;
TaskGroup::TaskGroup(const TaskGroup& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
TaskGroup& TaskGroup::operator=(const TaskGroup& other) {
  if (this != &other) impl_ = std::make_unique<Impl>(*other.impl_);  // also into a moved-from group
  return *this;
}
TaskGroup::TaskGroup(TaskGroup&&) noexcept = default;
TaskGroup& TaskGroup::operator=(TaskGroup&&) noexcept = default;

const std::vector<Task>& TaskGroup::tasks() const { return impl_->tasks_; }
WorkspaceType TaskGroup::workspace_type() const { return impl_->workspace_type_.value_or(WorkspaceType::kPrivate); }

TaskGroup::TaskGroup(std::optional<WorkspaceType> workspace_type) : impl_(std::make_unique<Impl>()) {
  impl_->workspace_type_ = workspace_type;
}

Task& TaskGroup::add(Task task) {
  if (impl_->by_node_) throw std::logic_error("TaskGroup: cannot add a task after tasks_by_node()");
  if (impl_->workspace_type_ && task.impl_->options_.workspace_type() &&
      *impl_->workspace_type_ != *task.impl_->options_.workspace_type())
    throw std::invalid_argument("TaskGroup: task '" + task.impl_->name_ +
                                "' has another workspace type than its group");
  if (!task.impl_->options_.workspace_type())
    task.impl_->options_.workspace_type(impl_->workspace_type_.value_or(WorkspaceType::kPrivate));
  if (!impl_->workspace_type_) impl_->workspace_type_ = task.impl_->options_.workspace_type();
  const std::string base = task.impl_->node_ + "/" + task.impl_->options_.name();
  std::string name = base;
  if (impl_->names_.count(name)) {  // the next free suffix, starting after the last one given to this base
    int& next = impl_->next_suffix_[base];
    do name = base + ":" + std::to_string(++next);
    while (impl_->names_.count(name));
  }
  impl_->names_.insert(name);
  task.impl_->name_ = name;
  impl_->tasks_.push_back(std::move(task));
  return impl_->tasks_.back();
}

std::vector<std::string> TaskGroup::used_nodes() const {
  std::vector<std::string> used;
  for (const auto& t : impl_->tasks_) {
    if (std::find(used.begin(), used.end(), t.impl_->node_) == used.end()) used.push_back(t.impl_->node_);
  }
  return used;
}

void TaskGroup::report_step(std::shared_ptr<ExecutionStep> step, const std::string& node, int64_t interval_ms) {
  if (!step) throw std::invalid_argument("TaskGroup::report_step: null step");
  if (impl_->by_node_) throw std::logic_error("TaskGroup: cannot add a report step after tasks_by_node()");
  step->run_every_ms(interval_ms);
  impl_->report_steps_.emplace_back(node, std::move(step));
}

std::map<std::string, std::string> TaskGroup::node_map(
    const std::function<std::string(const std::string&)>& remap) const {
  std::map<std::string, std::string> map;
  for (const auto& n : used_nodes()) map[n] = remap ? remap(n) : n;
  for (const auto& [n, step] : impl_->report_steps_) map.emplace(n, remap ? remap(n) : n);
  return map;
}

// One task for the mapped node `node`: its report steps and its tasks (each with its own setup) as
// concurrent substeps, under the node-level setups of all of them; outputs kept; Global wins.
Task TaskGroup::node_task(const std::string& node, const std::map<std::string, std::string>& map) const {
  std::vector<std::shared_ptr<ExecutionStep>> steps;
  std::vector<std::shared_ptr<ExecutionStep>> originals;
  for (const auto& [n, step] : impl_->report_steps_) {
    if (map.at(n) != node) continue;
    steps.push_back(step);
    originals.push_back(step);
  }
  std::vector<std::shared_ptr<TaskOutput>> outputs;
  WorkspaceType type = WorkspaceType::kPrivate;
  for (const auto& t : impl_->tasks_) {
    if (map.at(t.impl_->node_) != node) continue;
    steps.push_back(t.step_with_setup());
    if (t.impl_->step_) originals.push_back(t.impl_->step_);
    outputs.insert(outputs.end(), t.impl_->outputs_.begin(), t.impl_->outputs_.end());
    if (t.workspace_type() == WorkspaceType::kGlobal) type = WorkspaceType::kGlobal;
  }
  auto body = ExecutionStep::make(node + ":body", steps);
  body->concurrent_substeps(true);
  std::vector<std::shared_ptr<StepSetup>> node_setups;
  std::set<const StepSetup*> seen;
  for (const auto& s : originals) {
    for (const auto& setup : s->setups(SetupScope::kNode)) {
      if (seen.insert(setup.get()).second) node_setups.push_back(setup);
    }
  }
  Task combined(ExecutionStep::guarded(node, node_setups, body),
                TaskOptions().name("grouped_by_node").workspace_type(type).node(node));
  combined.impl_->outputs_ = outputs;
  combined.impl_->name_ = node + "/grouped_by_node";
  return combined;
}

const TaskGroup& TaskGroup::tasks_by_node(const std::function<std::string(const std::string&)>& remap) {
  const auto map = node_map(remap);
  if (impl_->by_node_) {
    if (map != impl_->by_node_map_)
      throw std::logic_error("TaskGroup::tasks_by_node: called again with another mapping");
    return *impl_->by_node_;
  }
  std::vector<std::string> order;  // mapped nodes in first-use order: the tasks', then the report steps'
  auto add = [&](const std::string& n) {
    if (std::find(order.begin(), order.end(), map.at(n)) == order.end()) order.push_back(map.at(n));
  };
  for (const auto& t : impl_->tasks_) add(t.impl_->node_);
  for (const auto& [n, step] : impl_->report_steps_) add(n);
  auto grouped = std::make_shared<TaskGroup>();
  for (const auto& node : order) grouped->impl_->tasks_.push_back(node_task(node, map));
  impl_->by_node_ = grouped;
  impl_->by_node_map_ = map;
  return *impl_->by_node_;
}

Task TaskGroup::to_task(const std::string& node) {
  const auto& grouped = tasks_by_node([&](const std::string&) { return node; });
  if (grouped.tasks().empty()) return Task(nullptr, TaskOptions().node(node));
  return grouped.tasks().front();
}

}  // namespace baton
