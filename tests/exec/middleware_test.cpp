// The middlewares (src/exec/middleware.cpp): chains, deduplication, failure handling, median stopping,
// ASHA and Hyperband, budgets.
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

// ---- middlewares ----

TEST(Middleware, SetEngineOnceAndChainOrder) {
  auto dedup = std::make_shared<Deduplication>();
  EXPECT_THROW(dedup->submit({}), std::logic_error);
  dedup->set_engine(std::make_shared<SequentialEngine>(report_x()));
  EXPECT_THROW(dedup->set_engine(std::make_shared<SequentialEngine>(report_x())), std::logic_error);

  auto filter = std::make_shared<Filter>([](const nlohmann::json& p) { return p.at("x").get<double>() < 5; },
                                         "x must be below 5");
  auto budget = std::make_shared<Budget>(BudgetOptions().max_trials(3));
  Chain chain({std::make_shared<Deduplication>(), filter, budget});
  chain.set_engine(std::make_shared<SequentialEngine>(report_x()));
  const auto a = chain.submit({{"x", 1.0}});
  const auto again = chain.submit({{"x", 1.0}});  // dedup answers: the budget does not see it
  const auto big = chain.submit({{"x", 9.0}});    // the filter answers
  EXPECT_EQ(chain.get(a)->status, TrialStatus::kTrained);
  EXPECT_EQ(chain.get(again)->status, TrialStatus::kInvalid);
  EXPECT_EQ(chain.get(again)->error, "duplicate of trial 0");
  EXPECT_EQ(chain.get(big)->status, TrialStatus::kInvalid);
  EXPECT_EQ(chain.get(big)->error, "x must be below 5");
  EXPECT_TRUE(chain.budget_available());
  chain.submit({{"x", 2.0}});
  chain.submit({{"x", 3.0}});
  EXPECT_FALSE(chain.budget_available());
  EXPECT_THROW(chain.submit({{"x", 4.0}}), std::runtime_error);
  EXPECT_EQ(chain.list().size(), 5U);
}

TEST(Deduplication, ReplayCopiesTheEarlierTrialsMetricsWithoutRunning) {
  int runs = 0;
  Deduplication dedup(DeduplicationOptions().action(DuplicateAction::kReplay));
  dedup.set_engine(std::make_shared<SequentialEngine>([&](TrialContext& t) {
    ++runs;
    t.report_intermediate(0.4, 1);
    t.report_final(0.8);
  }));
  dedup.submit({{"x", 1}});
  const auto replay = dedup.submit({{"x", 1}});
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(dedup.get(replay)->status, TrialStatus::kTrained);
  EXPECT_EQ(*dedup.get(replay)->metrics.final, 0.8);
  EXPECT_EQ(dedup.get(replay)->metrics.intermediate.size(), 1U);
}

TEST(FailureHandler, RetriesUpToKTimesThenFails) {
  std::mutex mutex;
  std::map<int64_t, int> runs;
  FailureHandler handler(FailureHandlerOptions().retries(2));
  handler.set_engine(std::make_shared<ThreadPoolEngine>(
      [&](TrialContext& t) {
        const int n = [&] {
          std::lock_guard lock(mutex);
          return ++runs[t.trial_id()];
        }();
        if (n < t.parameters().at("succeed_on").get<int>()) throw std::runtime_error("flaky " + std::to_string(n));
        t.report_final(n);
      },
      2));
  const auto second = handler.submit({{"succeed_on", 2}});
  const auto never = handler.submit({{"succeed_on", 9}});
  ASSERT_TRUE(handler.wait({}, 10.0));
  EXPECT_EQ(handler.get(second)->status, TrialStatus::kTrained);
  EXPECT_EQ(handler.get(second)->attempts, 2);
  EXPECT_EQ(*handler.get(second)->metrics.final, 2.0);
  EXPECT_EQ(handler.get(never)->status, TrialStatus::kFailed);
  EXPECT_EQ(handler.get(never)->attempts, 3);  // 1 + 2 retries
  EXPECT_EQ(handler.get(never)->error, "flaky 3");
}

TEST(FailureHandler, OrReportsAFixedMetric) {
  FailureHandler handler(FailureHandlerOptions().retries(0).failure_metric(-1.0));
  handler.set_engine(std::make_shared<SequentialEngine>([](TrialContext&) { throw std::runtime_error("diverged"); }));
  const auto id = handler.submit({});
  EXPECT_EQ(handler.get(id)->status, TrialStatus::kTrained);
  EXPECT_EQ(*handler.get(id)->metrics.final, -1.0);
  EXPECT_NE(handler.get(id)->error.find("diverged"), std::string::npos);
}

TEST(MedianStop, KillsATrialBelowTheMedianOfCompletedOnesAtTheSameStep) {
  auto median = std::make_shared<MedianStop>(MedianStopOptions().maximize(true).warmup_trials(3).warmup_steps(2));
  median->set_engine(std::make_shared<SequentialEngine>([](TrialContext& t) {
    const double slope = t.parameters().at("slope").get<double>();
    for (int step = 1; step <= 10 && !t.should_stop(); ++step) t.report_intermediate(slope * step, step);
    if (!t.should_stop()) t.report_final(slope * 10);
  }));
  for (double s : {1.0, 2.0, 3.0}) median->submit({{"slope", s}});
  EXPECT_EQ(median->kills(), 0);  // warm-up: three trials complete whatever they score
  const auto good = median->submit({{"slope", 2.5}});
  const auto bad = median->submit({{"slope", 0.5}});
  EXPECT_EQ(median->get(good)->status, TrialStatus::kTrained);
  EXPECT_EQ(median->get(bad)->status, TrialStatus::kInterrupted);
  EXPECT_EQ(median->get(bad)->metrics.intermediate.size(), 2U);  // killed at step 2, the first after warm-up
  EXPECT_EQ(median->kills(), 1);
}

TEST(Asha, KeepsTheBestThirdAtEachRungAndKillsTheRest) {
  auto asha = std::make_shared<Asha>(AshaOptions().maximize(true).min_step(1).reduction_factor(3));
  asha->set_engine(std::make_shared<SequentialEngine>([](TrialContext& t) {
    const double slope = t.parameters().at("slope").get<double>();
    for (int step = 1; step <= 9 && !t.should_stop(); ++step) t.report_intermediate(slope * step, step);
    if (!t.should_stop()) t.report_final(slope * 9);
  }));
  // Rungs at steps 1, 3, 9. The first trial passes every rung alone; then each must be in the top
  // third of the values at a rung so far.
  std::vector<int64_t> ids;
  for (double s : {5.0, 1.0, 2.0, 9.0, 3.0, 8.0}) ids.push_back(asha->submit({{"slope", s}}));
  auto status = [&](int i) { return asha->get(ids[i])->status; };
  EXPECT_EQ(status(0), TrialStatus::kTrained);
  EXPECT_EQ(status(1), TrialStatus::kInterrupted);  // rung 1: {5, 1}, keep 1: 1 < 5
  EXPECT_EQ(status(2), TrialStatus::kInterrupted);  // {5, 1, 2}: keep 1
  EXPECT_EQ(status(3), TrialStatus::kTrained);      // the best everywhere
  EXPECT_EQ(status(4), TrialStatus::kInterrupted);
  // Step 1: {5,1,2,9,3,8} keeps 2 (9, 8), so 8 goes on; step 3: {15, 27, 24} keeps 1: stopped there.
  EXPECT_EQ(status(5), TrialStatus::kInterrupted);
  EXPECT_EQ(asha->get(ids[5])->metrics.intermediate.size(), 3U);
  EXPECT_EQ(asha->kills(), 4);
  EXPECT_EQ(asha->get(ids[1])->metrics.intermediate.size(), 1U);
}

TEST(Asha, HyperbandBracketsHalveFromLaterStepsWithRungsOfTheirOwn) {
  auto hyperband = std::make_shared<Asha>(AshaOptions().maximize(true).min_step(1).reduction_factor(3).brackets(2));
  std::vector<int64_t> steps_reported;
  hyperband->set_engine(std::make_shared<SequentialEngine>([&](TrialContext& t) {
    const double slope = t.parameters().at("slope").get<double>();
    int64_t step = 1;
    for (; step <= 9 && !t.should_stop(); ++step) t.report_intermediate(slope * static_cast<double>(step), step);
    if (!t.should_stop()) t.report_final(slope * 9);
  }));
  // Even ids: bracket 0, rungs at 1, 3, 9. Odd ids: bracket 1, rungs at 3, 9 only.
  std::vector<int64_t> ids;
  for (double s : {5.0, 5.0, 1.0, 1.0}) ids.push_back(hyperband->submit({{"slope", s}}));
  // Trial 2 (bracket 0) is worse than trial 0 at step 1: stopped after one value.
  EXPECT_EQ(hyperband->get(ids[2])->status, TrialStatus::kInterrupted);
  EXPECT_EQ(hyperband->get(ids[2])->metrics.intermediate.size(), 1U);
  // Trial 3 (bracket 1) is compared with trial 1 only, first at step 3: it ran three steps.
  EXPECT_EQ(hyperband->get(ids[3])->status, TrialStatus::kInterrupted);
  EXPECT_EQ(hyperband->get(ids[3])->metrics.intermediate.size(), 3U);
  EXPECT_EQ(hyperband->kills(), 2);
  EXPECT_THROW(Asha(AshaOptions().brackets(0)), std::invalid_argument);
  EXPECT_THROW(Asha(AshaOptions().reduction_factor(1)), std::invalid_argument);
}

TEST(Budget, TrialSecondsAndWallTime) {
  Budget seconds(BudgetOptions().max_trial_seconds(0.05));
  seconds.set_engine(std::make_shared<SequentialEngine>([](TrialContext& t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    t.report_final(1);
  }));
  seconds.submit({});
  EXPECT_TRUE(seconds.budget_available());
  seconds.submit({});
  EXPECT_FALSE(seconds.budget_available());
  Budget wall(BudgetOptions().max_wall_s(0.0));
  wall.set_engine(std::make_shared<SequentialEngine>(report_x()));
  EXPECT_FALSE(wall.budget_available());
}

}  // namespace
}  // namespace baton
