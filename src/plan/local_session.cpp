#include <memory>
#include <set>
#include <thread>

#include "baton/plan/session.h"
#include "plan/executor.h"

namespace baton {

PlanError::PlanError(std::string node, std::string task, std::string step, const std::string& what, int rank)
    : std::runtime_error((rank >= 0 ? "rank " + std::to_string(rank) + ": " : std::string()) +
                         (task.empty() ? what
                                       : "task " + task + " on node " + node +
                                             (step.empty() ? "" : ", step '" + step + "'") + ": " + what)),
      node_(std::move(node)),
      task_(std::move(task)),
      step_(std::move(step)),
      what_(what),
      rank_(rank) {}

// One run of a group (or of one node's task): the cancellation flag and the first error.
struct detail::Run {
  std::atomic<bool> cancelled{false};
  std::mutex mutex;
  std::optional<PlanError> error;
  std::set<std::pair<const ExecutionStep*, const Workspace*>> ran_once;

  void fail(const std::string& node, const std::string& task, const std::string& step, const std::string& what) {
    {
      std::lock_guard lock(mutex);
      if (!error) error.emplace(node, task, step, what);
    }
    cancelled = true;
  }
};

namespace {

struct Frame : StepContext {
  Workspace* ws = nullptr;
  // Names live in the steps and the session for the whole run: frames (copied for every job)
  // point at them.
  const std::string* node_name = nullptr;
  const std::string* task_name = nullptr;
  int instance_index = 0;
  int64_t iter = 0;
  const std::atomic<bool>* cancel = nullptr;
  Workspace& workspace() override { return *ws; }
  const std::string& node() const override { return *node_name; }
  const std::string& task() const override { return *task_name; }
  int instance() const override { return instance_index; }
  int64_t iteration() const override { return iter; }
  bool cancelled() const override { return cancel->load(); }
};

class Runner {
 public:
  Runner(detail::Executor& executor, detail::Ticker& ticker, detail::Run& run, const std::string& node_name)
      : executor_(executor), ticker_(ticker), run_(run), node_(node_name) {}

  void step(const ExecutionStep& s, Frame f) {
    if (run_.cancelled) return;
    if (!s.task_name().empty()) f.task_name = &s.task_name();
    if (s.is_only_once()) {
      std::lock_guard lock(run_.mutex);
      if (!run_.ran_once.insert({&s, f.ws}).second) return;
    }
    std::shared_ptr<Workspace> own;
    if (s.creates_workspace()) {
      own = f.ws->child();
      f.ws = own.get();
    }
    if (s.instances() > 1) {
      std::vector<std::function<void()>> jobs;
      jobs.reserve(static_cast<std::size_t>(s.instances()));
      for (int i = 0; i < s.instances(); ++i) {
        jobs.emplace_back([this, &s, f, i] {
          auto ws = f.ws->child();  // each instance's own, seeing the task's
          Frame fi = f;
          fi.ws = ws.get();
          fi.instance_index = i;
          loop(s, fi);
        });
      }
      executor_.run_all(std::move(jobs));
      return;
    }
    loop(s, f);
  }

 private:
  void loop(const ExecutionStep& s, Frame f) {
    if (!s.guards().empty() || !s.task_name().empty()) {
      guarded(s, f);
      return;
    }
    const int64_t n = s.iterations() ? *s.iterations() : (s.has_stop_condition() ? INT64_MAX : 1);
    for (int64_t i = 0; i < n; ++i) {
      if (run_.cancelled) return;
      if (s.stops(*f.ws)) return;
      f.iter = i;
      body(s, f);
    }
  }

  void guarded(const ExecutionStep& s, Frame f) {
    std::size_t inited = 0;
    for (const auto& g : s.guards()) {
      if (run_.cancelled) break;
      if (!call(s.name() + ":init", f, [&] {
            if (g->init) g->init(*f.ws);
          }))
        break;
      ++inited;
    }
    if (inited == s.guards().size()) {
      for (const auto& sub : s.substeps()) step(*sub, f);
    }
    for (std::size_t i = inited; i-- > 0;) {  // exits of the inits that ran, in reverse
      const auto& g = s.guards()[i];
      call(s.name() + ":exit", f, [&] {
        if (g->exit) g->exit(*f.ws);
      });
    }
  }

  void body(const ExecutionStep& s, const Frame& f) {
    if (s.function()) {
      call(s.name(), f, [&] {
        Frame copy = f;
        s.function()(copy);
      });
      return;
    }
    if (!s.is_concurrent()) {
      for (const auto& sub : s.substeps()) {
        if (run_.cancelled) return;
        step(*sub, f);
      }
      return;
    }
    std::vector<const ExecutionStep*> periodic;
    std::vector<std::function<void()>> jobs;
    for (const auto& sub : s.substeps()) {
      if (sub->every_ms())
        periodic.push_back(sub.get());
      else
        jobs.emplace_back([this, sub = sub.get(), f] { step(*sub, f); });
    }
    std::vector<int> timers;
    timers.reserve(periodic.size());
    for (const auto* p : periodic)
      timers.push_back(ticker_.add(std::chrono::milliseconds(*p->every_ms()), [this, p, f] { step(*p, f); }));
    executor_.run_all(std::move(jobs));
    for (int id : timers) ticker_.remove(id);
    for (const auto* p : periodic) step(*p, f);  // once more, after the others ended
  }

  template <typename F>
  bool call(const std::string& step_name, const Frame& f, F fn) {
    try {
      fn();
      return true;
    } catch (const std::exception& e) {
      run_.fail(node_, *f.task_name, step_name, e.what());
    } catch (...) {
      run_.fail(node_, *f.task_name, step_name, "an exception that is not a std::exception");
    }
    return false;
  }

  detail::Executor& executor_;
  detail::Ticker& ticker_;
  detail::Run& run_;
  std::string node_;
};

}  // namespace

struct LocalSession::Impl {
  std::unique_ptr<detail::Executor> executor_;
  std::unique_ptr<detail::Ticker> ticker_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Workspace>> workspaces_;
  std::shared_ptr<detail::Run> current_;
};

LocalSession::LocalSession(LocalSessionOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->executor_ = std::make_unique<detail::Executor>(
      options.threads() > 0 ? options.threads() : static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
  impl_->ticker_ = std::make_unique<detail::Ticker>();
}

LocalSession::~LocalSession() = default;

int LocalSession::threads() const { return impl_->executor_->threads(); }

std::shared_ptr<Workspace> LocalSession::node_workspace(const std::string& node) {
  std::lock_guard lock(impl_->mutex_);
  auto& ws = impl_->workspaces_[node];
  if (!ws) ws = Workspace::create();
  return ws;
}

void LocalSession::cancel(const std::string& why) {
  std::shared_ptr<detail::Run> run;
  {
    std::lock_guard lock(impl_->mutex_);
    run = impl_->current_;
  }
  if (run) run->fail("", "", "", why);
}

namespace {

// Runs one combined node task in `run`, then fills its outputs from the run's workspace.
void run_combined(detail::Executor& executor, detail::Ticker& ticker, detail::Run& run, const Task& task,
                  const std::string& node, const std::shared_ptr<Workspace>& node_ws) {
  auto ws = task.workspace_type() == WorkspaceType::kGlobal ? node_ws : node_ws->child();
  Frame f;
  f.ws = ws.get();
  f.node_name = &node;
  f.task_name = &task.name();
  f.cancel = &run.cancelled;
  Runner runner(executor, ticker, run, node);
  if (task.step()) runner.step(*task.step(), f);
  if (run.cancelled) return;
  for (const auto& out : task.outputs()) {
    std::vector<WorkspaceValue> values;
    for (const auto& name : out->names()) {
      auto v = ws->get(name);
      if (!v) {
        run.fail(node, task.name(), "", "output '" + name + "': no such value in the node's workspace");
        return;
      }
      values.push_back(*v);
    }
    out->set(std::move(values));
  }
}

}  // namespace

void LocalSession::run(TaskGroup& group) {
  std::vector<const Task*> combined;
  for (const auto& task : group.tasks_by_node().tasks()) combined.push_back(&task);
  if (auto error = run_nodes(combined)) throw *error;
}

std::optional<PlanError> LocalSession::run_nodes(const std::vector<const Task*>& combined) {
  auto run = std::make_shared<detail::Run>();
  {
    std::lock_guard lock(impl_->mutex_);
    if (impl_->current_) throw std::logic_error("LocalSession: a group is already running in this session");
    impl_->current_ = run;
  }
  std::vector<std::function<void()>> jobs;
  for (const Task* task : combined) {
    auto ws = node_workspace(task->node());
    jobs.emplace_back(
        [this, ws, run, task] { run_combined(*impl_->executor_, *impl_->ticker_, *run, *task, task->node(), ws); });
  }
  impl_->executor_->run_all(std::move(jobs));
  {
    std::lock_guard lock(impl_->mutex_);
    impl_->current_.reset();
  }
  return run->error;
}

bool LocalSession::failing() const {
  std::lock_guard lock(impl_->mutex_);
  return impl_->current_ && impl_->current_->cancelled;
}

}  // namespace baton
