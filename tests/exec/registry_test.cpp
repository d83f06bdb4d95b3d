// Engines and middlewares by name: each builds and runs, and a wrong name, option or trial is a
// one-line error that says which.
#include "baton/exec/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

TEST(ExecRegistry, EveryEngineByNameRunsATrial) {
  const EngineTrial square{[](TrialContext& c) {
                             const double x = c.parameters()["x"];
                             c.report_final(x * x);
                           },
                           "echo 'baton: {\"final\": 9}'"};
  for (const auto& [name, options] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"sequential", {}}, {"thread_pool", {{"workers", 2}}}, {"process", {{"workers", 1}, {"timeout_s", 30}}}}) {
    auto engine = make_engine(name, square, options);
    const int64_t id = engine->submit({{"x", 3}});
    engine->wait({id});
    const auto trial = engine->get(id);
    ASSERT_TRUE(trial.has_value()) << name;
    EXPECT_EQ(trial->status, TrialStatus::kTrained) << name << ": " << trial->error;
    EXPECT_EQ(trial->metrics.final, 9.0) << name;
    engine->shutdown();
  }
  EXPECT_THAT(engine_names(), ::testing::ElementsAre("sequential", "thread_pool", "process"));
}

TEST(ExecRegistry, AWrongEngineNameOptionOrTrialSaysWhich) {
  EXPECT_THAT(error_of([] { make_engine("threads", {}); }),
              HasSubstr("unknown engine 'threads' (known: sequential, thread_pool, process)"));
  EXPECT_THAT(error_of([] { make_engine("thread_pool", {}); }), HasSubstr("runs a trial function, and none was given"));
  EXPECT_THAT(error_of([] { make_engine("process", {}); }), HasSubstr("runs a command, and none was given"));
  EXPECT_THAT(error_of([] {
                make_engine("process", {{}, "true"}, {{"workers", 0}});
              }),
              HasSubstr("engine process.workers: expected a whole number from 1 to 4096, got '0'"));
  EXPECT_THAT(error_of([] {
                make_engine("sequential", {[](TrialContext&) {}, ""}, {{"workers", 2}});
              }),
              HasSubstr("engine sequential.workers: unknown option (known: none)"));
}

TEST(ExecRegistry, EveryMiddlewareByNameTakesItsOptions) {
  EXPECT_THAT(middleware_names(),
              ::testing::ElementsAre("deduplication", "failure_handler", "median_stop", "asha", "budget"));
  EXPECT_NE(std::dynamic_pointer_cast<Deduplication>(make_middleware("deduplication", {{"action", "replay"}})),
            nullptr);
  EXPECT_NE(std::dynamic_pointer_cast<FailureHandler>(make_middleware("failure_handler", {{"retries", 2}})), nullptr);
  EXPECT_NE(std::dynamic_pointer_cast<MedianStop>(make_middleware("median_stop", {{"maximize", false}})), nullptr);
  EXPECT_NE(std::dynamic_pointer_cast<Asha>(make_middleware("asha", {{"min_step", 2}, {"brackets", 2}})), nullptr);
  // A budget of one trial: the second submit is refused.
  auto budget = make_middleware("budget", {{"max_trials", 1}});
  budget->set_engine(make_engine("sequential", {[](TrialContext& c) { c.report_final(1); }, ""}));
  budget->submit({{"x", 1}});
  EXPECT_FALSE(budget->budget_available());

  EXPECT_THAT(error_of([] { make_middleware("asha", {{"reduction_factor", 1}}); }), HasSubstr("asha.reduction_factor"));
  EXPECT_THAT(error_of([] {
                make_middleware("deduplication", {{"action", "drop"}});
              }),
              HasSubstr("deduplication.action: expected invalid or replay, got 'drop'"));
  EXPECT_THAT(error_of([] {
                make_middleware("median_stop", {{"warmup", 3}});
              }),
              HasSubstr("median_stop.warmup: unknown option (known: maximize, warmup_trials, warmup_steps)"));
}

}  // namespace
}  // namespace baton
