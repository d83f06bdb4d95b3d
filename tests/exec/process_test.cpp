#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "baton/exec/process.h"
#include "common/test_util.h"

namespace baton {
namespace {

ProcessEngineOptions with(std::string command, int workers = 2) {
  ProcessEngineOptions o;
  o.command(std::move(command));
  o.workers(workers);
  o.kill_grace_s(0.3);
  return o;
}

TEST(TrialProtocol, ParsesBatonLinesAndRejectsMalformedOnes) {
  EXPECT_FALSE(parse_protocol_line("epoch 3 loss 0.2"));
  EXPECT_EQ((*parse_protocol_line(R"(baton: {"final": 0.93})"))["final"], 0.93);
  EXPECT_EQ((*parse_protocol_line(R"(baton: {"intermediate": 0.7, "step": 3})"))["step"], 3);
  EXPECT_THROW(parse_protocol_line("baton: {final: 1}"), std::invalid_argument);
  EXPECT_THROW(parse_protocol_line(R"(baton: {"final": "high"})"), std::invalid_argument);
  EXPECT_THROW(parse_protocol_line(R"(baton: {"final": 1, "intermediate": 2})"), std::invalid_argument);
  EXPECT_THROW(parse_protocol_line(R"(baton: {"intermediate": 1, "step": 1.5})"), std::invalid_argument);
}

TEST(TrialProtocol, StepsAreWholeNumbersAnInt64HoldsKeptExactly) {
  EXPECT_EQ((*parse_protocol_line(R"(baton: {"intermediate": 1, "step": 9223372036854775807})"))["step"].get<int64_t>(),
            INT64_MAX);
  for (const char* bad :
       {R"(baton: {"intermediate": 1, "step": 18446744073709551615})",
        R"(baton: {"intermediate": 1, "step": 9223372036854775808})", R"(baton: {"intermediate": 1, "step": -1})",
        R"(baton: {"final": 1e999})", R"(baton: {"intermediate": -1e400})"}) {
    EXPECT_THROW(parse_protocol_line(bad), std::invalid_argument) << bad;
  }
}

// A trial ends when its process ends: a background child still holding stdout is stopped with the
// trial's process group, not waited for.
TEST(ProcessEngine, ATrialEndsWhenItsProcessEndsThoughAChildHoldsItsOutput) {
  ProcessEngine engine(with(R"((sleep 60; echo late) &
                               echo 'baton: {"intermediate": 1, "step": 9223372036854775807}'
                               echo 'baton: {"intermediate": 2}'
                               echo 'baton: {"final": 0.5}')"));
  const auto start = std::chrono::steady_clock::now();
  const auto id = engine.submit({{"x", 1}});
  ASSERT_TRUE(engine.wait({}, 30.0));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  const auto t = *engine.get(id);
  EXPECT_EQ(t.status, TrialStatus::kTrained) << t.error;
  EXPECT_EQ(*t.metrics.final, 0.5);
  ASSERT_EQ(t.metrics.intermediate.size(), 2U);
  EXPECT_EQ(t.metrics.intermediate[0].step, INT64_MAX);
  EXPECT_EQ(t.metrics.intermediate[1].step, INT64_MAX);  // the step after the last, saturated
}

// A listener that cannot record a value (a storage locked too long) does not make the trial fail:
// the process's outcome stands.
TEST(ProcessEngine, AListenerThatFailsDoesNotFailAFinishedTrial) {
  ProcessEngine engine(with(R"(echo 'baton: {"final": 0.25}')"));
  std::atomic<int> failures{0};
  engine.set_observer([&](const Trial& t) {
    if (t.metrics.final && t.status == TrialStatus::kRunning && failures++ == 0) {
      throw std::runtime_error("search.db: database is locked");
    }
  });
  const auto id = engine.submit({{"x", 1}});
  ASSERT_TRUE(engine.wait({}, 30.0));
  const auto t = *engine.get(id);
  EXPECT_EQ(failures.load(), 1);
  EXPECT_EQ(t.status, TrialStatus::kTrained) << t.error;
  EXPECT_EQ(*t.metrics.final, 0.25);
}

TEST(ProcessEngine, ACommandGetsItsParametersAndReportsMetrics) {
  const baton::testing::TempDir logs_tmp("process");
  const std::filesystem::path logs = logs_tmp.path();
  auto o = with(R"(echo "got $BATON_TRIAL_PARAMETERS"
                   echo 'baton: {"intermediate": 0.5, "step": 1}'
                   echo 'baton: {"intermediate": 0.75}'
                   printf 'baton: {"final": %s}' "$BATON_TRIAL_ID")");
  o.log_dir(logs);
  ProcessEngine engine(o);
  const auto a = engine.submit({{"lr", 0.1}});
  const auto b = engine.submit({{"lr", 0.2}});
  ASSERT_TRUE(engine.wait({}, 30.0));
  for (auto id : {a, b}) {
    const auto t = *engine.get(id);
    EXPECT_EQ(t.status, TrialStatus::kTrained) << t.error;
    EXPECT_EQ(*t.metrics.final, static_cast<double>(id));  // the last line had no newline
    ASSERT_EQ(t.metrics.intermediate.size(), 2U);
    EXPECT_EQ(t.metrics.intermediate[1].step, 2);  // a line without a step: the one after the last
  }
  std::ifstream log(logs / std::to_string(b) / "stdout.log");
  std::string first;
  std::getline(log, first);
  EXPECT_EQ(first, R"(got {"lr":0.2})");
  std::filesystem::remove_all(logs);
}

TEST(ProcessEngine, CrashesTimeoutsAndKillsEndTheTrialNotTheSearch) {
  auto o = with(R"(case "$BATON_TRIAL_PARAMETERS" in
      *crash*) echo 'CUDA out of memory' >&2; exit 3 ;;
      *segv*) kill -SEGV $$ ;;
      *hang*) sleep 30 ;;
      *stubborn*) trap '' TERM; sleep 30 ;;
      *silent*) exit 0 ;;
      *garbage*) echo 'baton: {final: 1}'; exit 0 ;;
    esac)",
                4);
  o.timeout_s(1.0);
  ProcessEngine engine(o);
  const auto crash = engine.submit({{"kind", "crash"}});
  const auto segv = engine.submit({{"kind", "segv"}});
  const auto hang = engine.submit({{"kind", "hang"}});
  const auto silent = engine.submit({{"kind", "silent"}});
  const auto garbage = engine.submit({{"kind", "garbage"}});
  const auto stubborn = engine.submit({{"kind", "stubborn"}});
  const auto t0 = std::chrono::steady_clock::now();
  while (engine.get(stubborn)->status != TrialStatus::kRunning)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  engine.kill(stubborn);
  ASSERT_TRUE(engine.wait({}, 20.0));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_EQ(engine.get(crash)->status, TrialStatus::kFailed);
  EXPECT_EQ(engine.get(crash)->error, "exit status 3; stderr: CUDA out of memory");
  EXPECT_EQ(engine.get(segv)->status, TrialStatus::kFailed);
  EXPECT_NE(engine.get(segv)->error.find("signal 11"), std::string::npos) << engine.get(segv)->error;
  EXPECT_EQ(engine.get(hang)->status, TrialStatus::kFailed);
  EXPECT_NE(engine.get(hang)->error.find("timed out after 1"), std::string::npos);
  EXPECT_EQ(engine.get(silent)->status, TrialStatus::kFailed);
  EXPECT_NE(engine.get(silent)->error.find("without printing"), std::string::npos);
  EXPECT_EQ(engine.get(garbage)->status, TrialStatus::kFailed);
  EXPECT_NE(engine.get(garbage)->error.find("trial protocol: not JSON"), std::string::npos);
  EXPECT_EQ(engine.get(stubborn)->status, TrialStatus::kInterrupted);  // SIGKILL after the grace period
}

TEST(ProcessEngine, RunsNAtOnceAndShutdownStopsTheRest) {
  ProcessEngine engine(with("sleep 30", 2));
  for (int i = 0; i < 4; ++i) engine.submit({{"i", i}});
  EXPECT_EQ(engine.idle_workers(), 0);
  while (engine.list(TrialStatus::kRunning).size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(engine.list(TrialStatus::kWaiting).size(), 2U);
  engine.shutdown();
  EXPECT_EQ(engine.list(TrialStatus::kInterrupted).size(), 4U);
}

}  // namespace
}  // namespace baton
