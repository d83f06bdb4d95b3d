// The GP strategy (src/exec/gp.cpp): it finds Branin's minimum in few trials and never asks twice.
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

TEST(Strategies, GpFindsBraninsMinimumInFewTrials) {
  const auto space = SearchSpace::from_json(nlohmann::json::parse(
      R"({"x1": {"_type": "uniform", "_value": [-5, 10]}, "x2": {"_type": "uniform", "_value": [0, 15]}})"));
  auto best = [&](const std::string& name, uint64_t seed) {
    auto s = make_strategy(name, space, StrategyOptions().seed(seed).maximize(false));
    SequentialEngine engine([](TrialContext& t) { t.report_final(branin(t.parameters())); });
    return *run_search(*s, engine, 30, false)->metrics.final;
  };
  EXPECT_EQ(best("gp", 1), best("gp", 1));
  for (uint64_t seed = 0; seed < 3; ++seed) {
    EXPECT_LT(best("gp", seed), 0.397887 + 0.1) << "seed " << seed;  // random at 30 trials: ~2
    EXPECT_LT(best("gp", seed), best("random", seed)) << "seed " << seed;
  }
}

// With few start-up trials GP can settle on branin's boundary point (x1 = 10, value 1.943) and ask
// for it again and again (the model sees no curvature there). A configuration within 1e-4 of each
// range of a tried one teaches it nothing: it takes the best acquisition elsewhere.
TEST(Strategies, GpNeverAsksForATriedConfigurationAgain) {
  const auto space = SearchSpace::from_json(nlohmann::json::parse(
      R"({"x1": {"_type": "uniform", "_value": [-5, 10]}, "x2": {"_type": "uniform", "_value": [0, 15]}})"));
  int near_duplicates = 0;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    auto s = make_strategy("gp", space, StrategyOptions().seed(seed).maximize(false).settings({{"startup_trials", 4}}));
    const auto asked = suggestions(*s, 40);
    for (std::size_t i = 0; i < asked.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        near_duplicates += std::abs(asked[i]["x1"].get<double>() - asked[j]["x1"].get<double>()) <= 15e-4 &&
                           std::abs(asked[i]["x2"].get<double>() - asked[j]["x2"].get<double>()) <= 15e-4;
      }
    }
  }
  EXPECT_EQ(near_duplicates, 0);
}

// Led to a face of the box by the slope (here the lowest x), the model has seen no trial just inside
// it and would ask for the face again and again; after two trials in a row there, the third goes
// inside (5-40% of the range), so an optimum a little inside is found, and one on the face still is.
TEST(Strategies, GpStepsInsideAFaceItHasAskedForTwiceInARow) {
  const auto space = SearchSpace::from_json(nlohmann::json::parse(
      R"({"x": {"_type": "uniform", "_value": [0, 1]}, "y": {"_type": "uniform", "_value": [0, 1]}})"));
  for (uint64_t seed = 0; seed < 3; ++seed) {
    auto s = make_strategy("gp", space, StrategyOptions().seed(seed).maximize(false));
    int in_a_row = 0, longest = 0, on_face = 0, inside = 0;
    double best = 1e9;
    for (int i = 0; i < 40; ++i) {
      Trial t;
      t.id = i + 1;
      t.parameters = *s->suggest();
      const double x = t.parameters["x"].get<double>(), y = t.parameters["y"].get<double>();
      t.status = TrialStatus::kTrained;
      t.metrics.final = x + (y - 0.3) * (y - 0.3);  // the lowest point on the face x = 0
      s->observe(t);
      best = std::min(best, *t.metrics.final);
      in_a_row = x == 0.0 ? in_a_row + 1 : 0;
      longest = std::max(longest, in_a_row);
      if (i < 20) continue;
      (x == 0.0 ? on_face : inside) += 1;
      EXPECT_LE(x, 0.4) << "seed " << seed;
    }
    EXPECT_EQ(longest, 2) << "seed " << seed;
    EXPECT_GE(on_face, 2 * inside - 1) << "seed " << seed;  // two on the face for each step inside
    EXPECT_LT(best, 1e-3) << "seed " << seed;
  }
}

}  // namespace
}  // namespace baton
