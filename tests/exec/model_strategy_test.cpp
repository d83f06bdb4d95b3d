// What model-based strategies share (src/exec/model_strategy.cpp): resuming gives the same next
// suggestions, running trials spread them, other workers' trials end the start-up.
#include <cmath>
#include <fstream>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "baton/exec/engine.h"
#include "baton/exec/gp.h"
#include "baton/exec/search.h"
#include "baton/exec/tpe.h"
#include "common/test_util.h"
#include "exec/space_fixtures.h"

namespace baton {
namespace {

using namespace space_fixtures;  // NOLINT(google-build-using-namespace)

TEST(Strategies, ModelStrategiesResumeWithTheSameNextSuggestions) {
  const auto space = SearchSpace::from_json(nlohmann::json::parse(
      R"({"x1": {"_type": "uniform", "_value": [-5, 10]}, "x2": {"_type": "uniform", "_value": [0, 15]}})"));
  for (const std::string name : {"tpe", "gp"}) {
    auto whole = make_strategy(name, space, StrategyOptions().seed(5).maximize(false));
    std::vector<Trial> trials;
    const auto all = suggestions(*whole, 16, &trials);
    // Killed after 12 trials, of which the last is still running: a new process restores them.
    std::vector<Trial> stored(trials.begin(), trials.begin() + 12);
    stored.back().status = TrialStatus::kInterrupted;
    stored.back().metrics.final.reset();
    auto resumed = make_strategy(name, space, StrategyOptions().seed(5).maximize(false));
    resumed->restore(stored);
    Trial again = trials[11];  // the interrupted trial runs again
    resumed->observe(again);
    EXPECT_EQ(suggestions(*resumed, 4), std::vector<nlohmann::json>(all.begin() + 12, all.end())) << name;
  }
}

TEST(Strategies, RunningTrialsSpreadTheNextSuggestions) {
  // 4 suggestions out at once after 20 observed trials: with the running trials counted they
  // are further apart than without.
  const auto space = SearchSpace::from_json(nlohmann::json::parse(
      R"({"x1": {"_type": "uniform", "_value": [-5, 10]}, "x2": {"_type": "uniform", "_value": [0, 15]}})"));
  auto spread = [&](const std::string& name, bool liar) {
    double total = 0;
    for (uint64_t seed = 0; seed < 4; ++seed) {
      auto s =
          make_strategy(name, space, StrategyOptions().seed(seed).maximize(false).settings({{"constant_liar", liar}}));
      suggestions(*s, 20);
      std::vector<nlohmann::json> out;
      for (int i = 0; i < 4; ++i) out.push_back(*s->suggest());
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < i; ++j) {
          total += std::hypot(out[i]["x1"].get<double>() - out[j]["x1"].get<double>(),
                              out[i]["x2"].get<double>() - out[j]["x2"].get<double>());
        }
      }
    }
    return total;
  };
  for (const std::string name : {"tpe", "gp"}) EXPECT_GT(spread(name, true), spread(name, false)) << name;
}

TEST(Strategies, OtherWorkersTrialsEndTheStartUp) {
  // A worker that joins a shared search with 20 trials of others done: its first suggestions use
  // the model (near the best trials at x ~ 0.1), not a start-up spread over the whole range.
  const auto space = SearchSpace::from_json(nlohmann::json::parse(R"({"x": {"_type": "uniform", "_value": [0, 1]}})"));
  for (const std::string name : {"tpe", "gp"}) {
    auto strategy = make_strategy(name, space, StrategyOptions().seed(1).maximize(false));
    for (int i = 0; i < 20; ++i) {
      Trial t;
      t.id = i + 1;
      t.parameters = {{"x", i / 20.0}};
      t.status = TrialStatus::kTrained;
      t.metrics.final = std::pow(i / 20.0 - 0.1, 2);
      strategy->observe(t);
    }
    for (int k = 0; k < 5; ++k) EXPECT_LT(strategy->suggest().value()["x"].get<double>(), 0.35) << name << " " << k;
  }
}

}  // namespace
}  // namespace baton
