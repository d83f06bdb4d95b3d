// The executor (src/plan/executor.cpp): a throwing step cancels its siblings; a fixed pool runs more
// concurrent steps than threads without deadlock.
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

}  // namespace
}  // namespace baton
