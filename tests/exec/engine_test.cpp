// The execution engines (src/exec/engine.cpp): sequential and thread-pool engines run, kill and
// restore trials.
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "baton/exec/engine.h"
#include "baton/exec/middleware.h"
#include "exec/engine_fixtures.h"

namespace baton {
namespace {

using namespace engine_fixtures;  // NOLINT(google-build-using-namespace)

TEST(SequentialEngine, TrainedFailedAndBadFinalValues) {
  SequentialEngine engine([](TrialContext& t) {
    const std::string kind = t.parameters().at("kind");
    if (kind == "throw") throw std::runtime_error("out of memory in step 3");
    if (kind == "nan") t.report_final(std::nan(""));
    if (kind == "ok") {
      t.report_intermediate(0.5, 1);
      t.report_final(0.9);
    }
  });
  const auto ok = engine.submit({{"kind", "ok"}});
  const auto thrown = engine.submit({{"kind", "throw"}});
  const auto nan = engine.submit({{"kind", "nan"}});
  const auto silent = engine.submit({{"kind", "silent"}});
  ASSERT_TRUE(engine.wait());
  EXPECT_EQ(engine.get(ok)->status, TrialStatus::kTrained);
  EXPECT_EQ(*engine.get(ok)->metrics.final, 0.9);
  ASSERT_EQ(engine.get(ok)->metrics.intermediate.size(), 1U);
  EXPECT_EQ(engine.get(ok)->attempts, 1);
  EXPECT_GT(engine.get(ok)->ended_at, 0.0);
  EXPECT_EQ(engine.get(thrown)->status, TrialStatus::kFailed);
  EXPECT_EQ(engine.get(thrown)->error, "out of memory in step 3");
  EXPECT_EQ(engine.get(nan)->status, TrialStatus::kFailed);
  EXPECT_NE(engine.get(nan)->error.find("nan"), std::string::npos);
  EXPECT_EQ(engine.get(silent)->status, TrialStatus::kFailed);
  EXPECT_NE(engine.get(silent)->error.find("without reporting a final value"), std::string::npos);
  EXPECT_EQ(engine.list(TrialStatus::kFailed).size(), 3U);
}

TEST(ThreadPoolEngine, RunsNAtOnceAndWaitWakesOnEvents) {
  std::atomic<int> running{0}, most{0};
  ThreadPoolEngine engine(
      [&](TrialContext& t) {
        const int now = ++running;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        --running;
        t.report_final(t.parameters().at("x").get<double>());
      },
      4);
  EXPECT_EQ(engine.idle_workers(), 4);
  std::vector<int64_t> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(engine.submit({{"x", i}}));
  EXPECT_EQ(engine.idle_workers(), 0);
  ASSERT_TRUE(engine.wait(ids, 30.0));
  EXPECT_EQ(most.load(), 4);
  EXPECT_EQ(engine.list(TrialStatus::kTrained).size(), 12U);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(*engine.get(ids[i])->metrics.final, i);
  EXPECT_FALSE(engine.wait_any(0.0) == std::nullopt);  // completions queue up for wait_any
  engine.shutdown();
  EXPECT_THROW(engine.submit({{"x", 1}}), std::runtime_error);
}

TEST(ThreadPoolEngine, KillStopsARunningTrialAndDropsAWaitingOne) {
  std::atomic<int> started{0};
  ThreadPoolEngine engine(
      [&](TrialContext& t) {
        ++started;
        while (!t.should_stop()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      1);
  const auto running = engine.submit({});
  const auto waiting = engine.submit({});
  while (engine.get(running)->status != TrialStatus::kRunning) std::this_thread::yield();
  EXPECT_TRUE(engine.kill(waiting));
  EXPECT_EQ(engine.get(waiting)->status, TrialStatus::kInterrupted);
  EXPECT_TRUE(engine.kill(running));
  ASSERT_TRUE(engine.wait({}, 10.0));
  EXPECT_EQ(engine.get(running)->status, TrialStatus::kInterrupted);
  EXPECT_EQ(started.load(), 1);  // the waiting one never ran
  EXPECT_FALSE(engine.kill(running));
}

// A trial lost with its process runs again (its curve kept: a recipe's trial resumes from its
// checkpoint and reports only what comes after it).
TEST(ExecutionEngine, StateDictRestoresFinishedTrialsAndRerunsUnfinishedOnes) {
  std::atomic<int> runs{0};
  ThreadPoolEngine first(report_x(), 1);
  first.submit({{"x", 1.0}});
  ASSERT_TRUE(first.wait());
  nlohmann::json state = first.state_dict();
  Trial lost;  // a trial that was running when the process died
  lost.id = 1;
  lost.parameters = {{"x", 2.0}};
  lost.status = TrialStatus::kRunning;
  lost.metrics.intermediate = {{10, 0.5}, {20, 0.6}, {30, 0.7}};  // its curve before the process died
  lost.metrics.final = 0.9;
  state["trials"].push_back(lost.to_json());
  state["next_id"] = 2;
  ThreadPoolEngine second(
      [&](TrialContext& t) {
        ++runs;
        t.report_intermediate(0.65, 20);  // resumed from its checkpoint at step 10
        t.report_intermediate(0.75, 30);
        t.report_final(t.parameters().at("x").get<double>());
      },
      1);
  second.load_state_dict(state);
  ASSERT_TRUE(second.wait({}, 10.0));
  EXPECT_EQ(runs.load(), 1);  // only the lost one ran again
  EXPECT_EQ(*second.get(0)->metrics.final, 1.0);
  EXPECT_EQ(*second.get(1)->metrics.final, 2.0);
  // The curve stays; the steps reported again take the new values.
  const auto curve = second.get(1)->metrics.intermediate;
  ASSERT_EQ(curve.size(), 3U);
  EXPECT_EQ(curve[0].value, 0.5);
  EXPECT_EQ(curve[1].step, 20);
  EXPECT_EQ(curve[1].value, 0.65);
  EXPECT_EQ(curve[2].value, 0.75);
  EXPECT_EQ(second.submit({{"x", 3.0}}), 2);
}

}  // namespace
}  // namespace baton
