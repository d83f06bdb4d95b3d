// CMA-ES (src/exec/cmaes.cpp): it converges on a sphere where random search does not, restarts with
// twice the population, rounds integers and draws choices.
#include "baton/exec/pareto.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "baton/exec/cmaes.h"
#include "baton/exec/nsga2.h"
#include "baton/exec/strategy.h"

namespace baton {
namespace {

// ---- CMA-ES (here beside NSGA-II: the other population-based strategy) ----

double run_on(Strategy& s, int trials, const std::function<double(const nlohmann::json&)>& f) {
  double best = INFINITY;
  for (int i = 0; i < trials; ++i) {
    Trial t;
    t.id = i;
    t.parameters = *s.suggest();
    t.status = TrialStatus::kTrained;
    t.metrics.final = f(t.parameters);
    best = std::min(best, *t.metrics.final);
    s.observe(t);
  }
  return best;
}

SearchSpace cube(int dims, double lo, double hi) {
  nlohmann::json space;
  for (int j = 0; j < dims; ++j) space["x" + std::to_string(j)] = {{"_type", "uniform"}, {"_value", {lo, hi}}};
  return SearchSpace::from_json(space);
}

double sphere(const nlohmann::json& p) {
  double v = 0;
  for (const auto& [k, x] : p.items()) v += (x.get<double>() - 0.3) * (x.get<double>() - 0.3);
  return v;
}

TEST(CmaEs, ConvergesOnASphereFullAndSeparableWhereRandomSearchDoesNot) {
  for (int dims : {10, 50}) {  // 50 > separable_above: sep-CMA
    auto cma = make_strategy("cmaes", cube(dims, -5, 5), StrategyOptions().seed(1).maximize(false));
    auto random = make_strategy("random", cube(dims, -5, 5), StrategyOptions().seed(1));
    const double c = run_on(*cma, 600, sphere), r = run_on(*random, 600, sphere);
    EXPECT_LT(c, 0.05 * r) << dims << ": cma " << c << ", random " << r;
  }
}

TEST(CmaEs, AConvergedRunRestartsWithTwiceThePopulation) {
  CmaEsStrategy s(cube(1, 0, 1), 2, false);
  run_on(s, 400, [](const nlohmann::json&) { return 1.0; });  // flat: converged once its values stay equal
  EXPECT_GE(s.restarts(), 1);
}

TEST(CmaEs, IntegersAreRoundedChoicesDrawnAndOnlyChoicesRefused) {
  const auto space = SearchSpace::from_json(nlohmann::json::parse(R"({
    "n": {"_type": "randint", "_value": [1, 9]}, "lr": {"_type": "loguniform", "_value": [1e-4, 1]},
    "act": {"_type": "choice", "_value": ["relu", "gelu"]}})"));
  auto s = make_strategy("cmaes", space, StrategyOptions().seed(4));
  std::set<std::string> acts;
  for (int i = 0; i < 40; ++i) {
    const auto p = *s->suggest();
    EXPECT_TRUE(p["n"].is_number_integer()) << p;
    EXPECT_TRUE(space.contains(p)) << p;
    acts.insert(p["act"].get<std::string>());
  }
  EXPECT_EQ(acts.size(), 2U);
  const auto choices =
      SearchSpace::from_json(nlohmann::json::parse(R"({"act": {"_type": "choice", "_value": [1, 2]}})"));
  try {
    make_strategy("cmaes", choices, StrategyOptions());
    FAIL() << "a space of only choices was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("only choices"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_strategy("cmaes", space, StrategyOptions().directions({true, false})), std::invalid_argument);
}

}  // namespace
}  // namespace baton
