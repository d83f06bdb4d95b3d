#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/plan/session.h"

namespace baton {
namespace {

using Steps = std::vector<std::shared_ptr<ExecutionStep>>;

// A log of what ran, in order, shared by the steps of a test.
struct Log {
  std::mutex mutex;
  std::vector<std::string> lines;
  void add(const std::string& s) {
    std::lock_guard lock(mutex);
    lines.push_back(s);
  }
  std::vector<std::string> get() {
    std::lock_guard lock(mutex);
    return lines;
  }
};

std::shared_ptr<ExecutionStep> fn(const std::string& name, StepFunction f) {
  return ExecutionStep::make(name, std::move(f));
}

TEST(Plan, NodesTasksNamesAndCluster) {
  Cluster cluster;
  Cluster::Scope scope(cluster);
  TaskGroup group;
  group.add(Task(fn("s1", [](StepContext&) {})));
  group.add(Task(fn("s2", [](StepContext&) {}), TaskOptions().name("s1")));
  {
    Node n2("n2", {{"cores", 4}});
    group.add(Task(fn("s3", [](StepContext&) {})));
    EXPECT_EQ(Node::current(), "n2");
    {
      Node n1("n1");
      group.add(Task(fn("s4", [](StepContext&) {})));
    }
    group.add(Task(fn("s5", [](StepContext&) {})));
  }
  EXPECT_EQ(Node::current(), "local");
  EXPECT_EQ(group.used_nodes(), (std::vector<std::string>{"local", "n2", "n1"}));
  EXPECT_EQ(cluster.nodes(), (std::vector<std::string>{"local", "n2", "n1"}));
  EXPECT_EQ(cluster.node_properties("n2")["cores"], 4);
  EXPECT_EQ(group.tasks()[0].name(), "local/s1");
  EXPECT_EQ(group.tasks()[1].name(), "local/s1:1");
  EXPECT_EQ(group.tasks()[2].name(), "n2/s3");
  {
    TaskGroup names;
    names.add(Task(nullptr, TaskOptions().name("x")));
    names.add(Task(nullptr, TaskOptions().name("x:2")));  // taken by hand: the next "x" skips it
    EXPECT_EQ(names.add(Task(nullptr, TaskOptions().name("x"))).name(), "local/x:1");
    EXPECT_EQ(names.add(Task(nullptr, TaskOptions().name("x"))).name(), "local/x:3");
    EXPECT_EQ(names.add(Task(nullptr, TaskOptions().name("x").node("n9"))).name(), "n9/x");
  }
  const auto& by_node = group.tasks_by_node();
  ASSERT_EQ(by_node.tasks().size(), 3U);
  EXPECT_EQ(by_node.tasks()[1].node(), "n2");
  EXPECT_EQ(&group.tasks_by_node(), &by_node) << "callable again with the same mapping";
  EXPECT_THROW(group.tasks_by_node([](const std::string&) { return "x"; }), std::logic_error);
  EXPECT_THROW(group.add(Task()), std::logic_error);
}

TEST(Plan, SetupsAndExitsAroundInstancesInOrder) {
  Log log;
  auto task_setup = std::make_shared<StepSetup>(
      StepSetup{[&](Workspace& ws) {
                  log.add("task init");
                  ws.set("total", 0.0);
                },
                [&](Workspace& ws) { log.add("task exit " + to_string(*ws.get("total"))); }});
  auto instance_setup = std::make_shared<StepSetup>(StepSetup{[&](Workspace& ws) {
                                                                log.add("instance init");
                                                                ws.set("local", 0.0);
                                                              },
                                                              [&](Workspace& ws) {
                                                                log.add("instance exit");
                                                                ws.add("total", ws.get_double("local"));
                                                              }});
  auto node_setup = std::make_shared<StepSetup>(
      StepSetup{[&](Workspace&) { log.add("node init"); }, [&](Workspace&) { log.add("node exit"); }});
  auto body = fn("count", [&](StepContext& c) {
    c.workspace().add("local", 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // both instances start before one ends
  });
  body->num_iter(20).add_setup(SetupScope::kTask, task_setup).add_setup(SetupScope::kInstance, instance_setup);
  body->add_setup(SetupScope::kNode, node_setup);
  TaskGroup group;
  Task task(body, TaskOptions().name("count").num_instances(2).node("trainer"));
  auto total = task.add_output("total");
  group.add(std::move(task));
  LocalSession session(2);
  session.run(group);
  const auto lines = log.get();
  ASSERT_EQ(lines.size(), 8U) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0], "node init");
  EXPECT_EQ(lines[1], "task init");
  EXPECT_EQ(lines[2], "instance init");
  EXPECT_EQ(lines[3], "instance init") << "two instances";
  EXPECT_EQ(lines[4], "instance exit");
  EXPECT_EQ(lines[5], "instance exit");
  EXPECT_EQ(lines[6], "task exit 40");
  EXPECT_EQ(lines[7], "node exit");
  EXPECT_EQ(std::get<double>(total->get()), 40.0);
}

TEST(Plan, InstanceWorkspacesAreSeparateAndSeeTheTasks) {
  auto setup = std::make_shared<StepSetup>(StepSetup{[](Workspace& ws) {
                                                       ws.set("shared", int64_t{7});
                                                       ws.set("seen", 0.0);
                                                     },
                                                     [](Workspace& ws) { ws.set("leaked", ws.has("mine")); }});
  auto body = fn("look", [](StepContext& c) {
    c.workspace().set("mine", int64_t{c.instance()});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (c.workspace().get_int("mine") != c.instance()) throw std::runtime_error("instances share a workspace");
    c.workspace().add("seen", static_cast<double>(c.workspace().get_int("shared")));  // the task's value
  });
  body->add_setup(SetupScope::kTask, setup);
  TaskGroup group;
  Task task(body, TaskOptions().num_instances(3));
  auto seen = task.add_output("seen");
  auto leaked = task.add_output("leaked");
  group.add(std::move(task));
  LocalSession session(3);
  session.run(group);
  EXPECT_EQ(std::get<double>(seen->get()), 21.0);
  EXPECT_FALSE(std::get<bool>(leaked->get()));
}

TEST(Plan, PrivateWorkspacesAreDiscardedGlobalOnesKept) {
  for (auto type : {WorkspaceType::kPrivate, WorkspaceType::kGlobal}) {
    LocalSession session(2);
    double last = 0;
    for (int run = 0; run < 2; ++run) {
      TaskGroup group(type);
      Task task(fn("inc", [](StepContext& c) { c.workspace().add("runs", 1); }));
      auto out = task.add_output("runs");
      group.add(std::move(task));
      session.run(group);
      last = std::get<double>(out->get());
    }
    EXPECT_EQ(last, type == WorkspaceType::kGlobal ? 2.0 : 1.0);
    EXPECT_EQ(session.node_workspace("local")->has("runs"), type == WorkspaceType::kGlobal);
  }
  TaskGroup mixed(WorkspaceType::kGlobal);
  EXPECT_THROW(mixed.add(Task(nullptr, TaskOptions().workspace_type(WorkspaceType::kPrivate))), std::invalid_argument);
}

TEST(Plan, NumIterShouldStopAndOnlyOnce) {
  auto once = fn("once", [](StepContext& c) { c.workspace().add("once", 1); });
  once->only_once();
  auto inc = fn("inc", [](StepContext& c) {
    c.workspace().add("n", 1);
    if (c.workspace().get_double("n") >= 5) c.workspace().set("stop", true);
  });
  auto loop = ExecutionStep::make("loop", Steps{once, inc});
  loop->should_stop_flag("stop");  // no num_iter: until it stops
  auto counted = fn("counted", [](StepContext& c) { c.workspace().add("m", 1); });
  counted->num_iter(7);
  auto predicate = fn("p", [](StepContext& c) { c.workspace().add("k", 1); });
  predicate->num_iter(100).should_stop([](const Workspace& ws) { return ws.has("k") && ws.get_double("k") >= 3; });
  TaskGroup group;
  Task task(ExecutionStep::make("all", Steps{loop, counted, predicate}));
  auto n = task.add_output("n");
  auto once_count = task.add_output("once");
  auto m = task.add_output("m");
  auto k = task.add_output("k");
  group.add(std::move(task));
  LocalSession(2).run(group);
  EXPECT_EQ(std::get<double>(n->get()), 5.0);
  EXPECT_EQ(std::get<double>(once_count->get()), 1.0);
  EXPECT_EQ(std::get<double>(m->get()), 7.0);
  EXPECT_EQ(std::get<double>(k->get()), 3.0);
}

TEST(Plan, ReportStepsRunAtTheirIntervalAndOnceAtTheEnd) {
  std::atomic<int> reports{0};
  std::atomic<bool> work_done{false};
  std::atomic<int> reports_after_end{0};
  auto report = fn("report", [&](StepContext&) {
    ++reports;
    if (work_done) ++reports_after_end;
  });
  TaskGroup group;
  // The work lasts until the report step has run 3 times at its interval (no timing assumed: a
  // loaded machine only makes it longer; 30 s at most, then the test fails below).
  group.add(Task(fn("work", [&](StepContext&) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (reports.load() < 3 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    work_done = true;
  })));
  group.report_step(report, "local", 50);
  LocalSession(2).run(group);
  EXPECT_GE(reports.load(), 4);  // 3 while the work ran, and once after it ended
  EXPECT_GE(reports_after_end.load(), 1);
  EXPECT_LE(reports_after_end.load(), 2);  // the last one, and at most one tick that raced it
}

TEST(Plan, AThrowingStepCancelsItsSiblingsAndTheRunReportsIt) {
  std::atomic<bool> sibling_saw_cancel{false};
  std::atomic<int> later_runs{0};
  auto failing = fn("boom", [](StepContext&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    throw std::runtime_error("out of cheese");
  });
  auto hanging = fn("hang", [&](StepContext& c) {  // would run for a minute without the flag
    for (int i = 0; i < 60000 && !c.cancelled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    sibling_saw_cancel = c.cancelled();
  });
  auto later = fn("later", [&](StepContext&) { ++later_runs; });
  auto exit_ran = std::make_shared<std::atomic<bool>>(false);
  auto guard = std::make_shared<StepSetup>(StepSetup{[](Workspace&) {}, [exit_ran](Workspace&) { *exit_ran = true; }});
  hanging->add_setup(SetupScope::kTask, guard);
  TaskGroup group;
  {
    Node n("n1");
    group.add(Task(ExecutionStep::make("seq", Steps{failing, later}), TaskOptions().name("fails")));
    group.add(Task(hanging, TaskOptions().name("hangs")));
  }
  LocalSession session(2);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    session.run(group);
    ADD_FAILURE() << "no error";
  } catch (const PlanError& e) {
    EXPECT_EQ(e.node(), "n1");
    EXPECT_EQ(e.task(), "n1/fails");
    EXPECT_EQ(e.step(), "boom");
    EXPECT_NE(std::string(e.what()).find("out of cheese"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(sibling_saw_cancel);
  EXPECT_EQ(later_runs.load(), 0) << "the failing sequence stops";
  EXPECT_TRUE(*exit_ran) << "exits of setups that ran still run";
}

TEST(Plan, AFixedPoolRunsMoreConcurrentStepsThanThreadsWithoutDeadlock) {
  // 3 levels of 8 concurrent substeps on 2 threads: waiting threads run queued work.
  std::atomic<int> leaves{0};
  std::function<std::shared_ptr<ExecutionStep>(int)> tree = [&](int depth) -> std::shared_ptr<ExecutionStep> {
    if (depth == 0) return fn("leaf", [&](StepContext&) { ++leaves; });
    Steps subs;
    for (int i = 0; i < 8; ++i) subs.push_back(tree(depth - 1));
    auto s = ExecutionStep::make("level" + std::to_string(depth), subs);
    s->concurrent_substeps();
    return s;
  };
  TaskGroup group;
  group.add(Task(tree(3)));
  LocalSession session(2);
  session.run(group);
  EXPECT_EQ(leaves.load(), 512);
  EXPECT_EQ(session.threads(), 2);
}

TEST(Plan, WorkspaceValuesAndErrors) {
  auto ws = Workspace::create();
  ws->set("i", int64_t{3});
  ws->set("s", std::string("x"));
  auto child = ws->child();
  EXPECT_EQ(child->get_int("i"), 3);
  EXPECT_EQ(child->get_double("i"), 3.0);
  child->set("i", int64_t{4});
  EXPECT_EQ(ws->get_int("i"), 3);
  EXPECT_THROW(child->get_double("s"), std::invalid_argument);
  EXPECT_THROW(child->get_double("none"), std::out_of_range);
  EXPECT_EQ(child->names(), std::vector<std::string>{"i"});
}

}  // namespace
}  // namespace baton

namespace baton {
namespace {

TEST(Plan, ASharedSetupRunsOncePerTaskOrGroupRun) {
  std::atomic<int> task_inits{0}, task_exits{0}, node_inits{0};
  auto per_task =
      std::make_shared<StepSetup>(StepSetup{[&](Workspace&) { ++task_inits; }, [&](Workspace&) { ++task_exits; }});
  auto per_node = std::make_shared<StepSetup>(StepSetup{[&](Workspace&) { ++node_inits; }, {}});
  auto a = fn("a", [](StepContext&) {});
  auto b = fn("b", [](StepContext&) {});
  a->add_setup(SetupScope::kTask, per_task).add_setup(SetupScope::kNode, per_node);
  b->add_setup(SetupScope::kTask, per_task).add_setup(SetupScope::kNode, per_node);
  LocalSession session(2);
  for (int run = 0; run < 2; ++run) {
    TaskGroup group;
    group.add(Task(ExecutionStep::make("ab", Steps{a, b}), TaskOptions().node("n")));  // a and b in one task
    group.add(Task(b, TaskOptions().node("n")));                                       // b alone in another
    session.run(group);
  }
  EXPECT_EQ(task_inits.load(), 4) << "once per task (2 tasks) per run (2 runs)";
  EXPECT_EQ(task_exits.load(), 4);
  EXPECT_EQ(node_inits.load(), 2) << "once per node per group run";
}

TEST(Plan, WorkspaceValuesRoundTripAsJson) {
  const std::vector<WorkspaceValue> values = {1.25,
                                              int64_t{-7},
                                              true,
                                              std::string("x\"y"),
                                              torch::tensor({0.1F, 2.5F}).reshape({1, 2}),
                                              torch::arange(6, torch::kInt32),
                                              torch::tensor({true, false}),
                                              torch::tensor({1.0 / 3.0}, torch::kFloat64)};
  for (const auto& v : values) {
    const auto back = value_from_json(nlohmann::json::parse(value_to_json(v).dump()));
    ASSERT_EQ(back.index(), v.index()) << value_to_json(v).dump();
    if (const auto* t = std::get_if<at::Tensor>(&v)) {
      const auto& u = std::get<at::Tensor>(back);
      EXPECT_EQ(u.scalar_type(), t->scalar_type());
      EXPECT_TRUE(torch::equal(u, *t)) << value_to_json(v).dump();
    } else {
      EXPECT_EQ(value_to_json(back), value_to_json(v));
    }
  }
  EXPECT_EQ(value_to_plain_json(torch::arange(4, torch::kInt64).reshape({2, 2})).dump(), "[[0,1],[2,3]]");
  EXPECT_THROW(value_from_json(nlohmann::json{{"q", 1}}), std::invalid_argument);
  EXPECT_THROW(value_from_json(nlohmann::json::parse(R"({"t": {"dtype": "float32", "shape": [3], "data": [1]}})")),
               std::invalid_argument);
  EXPECT_THROW(value_from_json(nlohmann::json::parse(R"({"t": {"dtype": "complex", "shape": [1], "data": [1]}})")),
               std::invalid_argument);
}

TEST(Plan, CancelFromAnotherThreadStopsTheRun) {
  LocalSession session(2);
  TaskGroup group;
  group.add(Task(fn("spin", [](StepContext& c) {
    while (!c.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  })));
  std::atomic<bool> returned{false};
  std::thread stopper([&] {  // again until the run ends: a cancel before the run starts does nothing
    while (!returned) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      session.cancel("stopped by the user");
    }
  });
  try {
    session.run(group);
    ADD_FAILURE() << "no error";
  } catch (const PlanError& e) {
    EXPECT_STREQ(e.what(), "stopped by the user");
    EXPECT_TRUE(e.task().empty());
  }
  returned = true;
  stopper.join();
}

}  // namespace
}  // namespace baton
