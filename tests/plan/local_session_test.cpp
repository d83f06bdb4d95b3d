// LocalSession (src/plan/local_session.cpp): setups and exits in order, num_iter, report steps, cancel.
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/plan/session.h"
#include "plan/plan_fixtures.h"

namespace baton {
namespace {

using namespace plan_fixtures;  // NOLINT(google-build-using-namespace)

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
