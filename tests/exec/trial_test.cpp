// Trials and model events (src/exec/trial.cpp): status names, listeners in order.
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "baton/exec/engine.h"
#include "baton/exec/middleware.h"

namespace baton {
namespace {

TEST(Trial, StatusNamesAndCompleted) {
  EXPECT_TRUE(completed(TrialStatus::kTrained));
  EXPECT_TRUE(completed(TrialStatus::kInvalid));
  EXPECT_FALSE(completed(TrialStatus::kRetrying));
  EXPECT_FALSE(completed(TrialStatus::kRunning));
  EXPECT_EQ(trial_status_from_string("Interrupted"), TrialStatus::kInterrupted);
  EXPECT_THROW(trial_status_from_string("done"), std::invalid_argument);
  Trial t;
  t.id = 3;
  t.parameters = {{"lr", 0.1}};
  t.status = TrialStatus::kTrained;
  t.metrics.intermediate = {{1, 0.5}, {2, 0.7}, {3, 0.6}};
  t.metrics.final = 0.6;
  const Trial back = Trial::from_json(t.to_json());
  EXPECT_EQ(back.to_json(), t.to_json());
  EXPECT_EQ(*t.best_up_to(2, true), 0.7);
  EXPECT_EQ(*t.best_up_to(3, false), 0.5);
  EXPECT_FALSE(t.best_up_to(0, true));
}

TEST(ModelEvents, ListenersRunInOrderAndCanStopOrPreventTheDefault) {
  SequentialEngine engine([](TrialContext& t) {
    t.report_intermediate(1.0, 1);
    t.report_intermediate(2.0, 2);
    t.report_intermediate(3.0, 3);
    t.report_final(3.0);
  });
  std::vector<std::string> seen;
  engine.register_callback(ModelEventType::kIntermediateMetric, [&](ModelEvent& e) {
    const auto& m = static_cast<IntermediateMetric&>(e);
    seen.push_back("a" + std::to_string(m.step));
    if (m.step == 2) e.stop_propagation();  // b never sees step 2, and the trial does not record it
    if (m.step == 3) e.prevent_default();   // b sees step 3, the trial does not record it
  });
  const int b = engine.register_callback(ModelEventType::kIntermediateMetric, [&](ModelEvent& e) {
    seen.push_back("b" + std::to_string(static_cast<IntermediateMetric&>(e).step));
  });
  const auto id = engine.submit({});
  EXPECT_EQ(seen, (std::vector<std::string>{"a1", "b1", "a2", "a3", "b3"}));
  const auto inter = engine.get(id)->metrics.intermediate;
  ASSERT_EQ(inter.size(), 1U);
  EXPECT_EQ(inter[0].step, 1);
  engine.unregister_callback(b);
  seen.clear();
  engine.submit({});
  EXPECT_EQ(seen, (std::vector<std::string>{"a1", "a2", "a3"}));
}

}  // namespace
}  // namespace baton
