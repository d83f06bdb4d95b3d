// Tasks, task groups and clusters (src/plan/task.cpp): names, nodes, shared setups.
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

}  // namespace
}  // namespace baton
