// What gp_test.cpp, model_strategy_test.cpp, strategy_test.cpp and tpe_test.cpp share.
#pragma once

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

namespace baton::space_fixtures {

inline double branin(const nlohmann::json& p) {
  const double x1 = p["x1"].get<double>(), x2 = p["x2"].get<double>();
  const double a = x2 - 5.1 / (4 * M_PI * M_PI) * x1 * x1 + 5 / M_PI * x1 - 6;
  return a * a + 10 * (1 - 1 / (8 * M_PI)) * std::cos(x1) + 10;
}

inline double best_of(const std::string& strategy, uint64_t seed) {
  const auto space = SearchSpace::from_json(nlohmann::json::parse(
      R"({"x1": {"_type": "uniform", "_value": [-5, 10]}, "x2": {"_type": "uniform", "_value": [0, 15]}})"));
  auto s = make_strategy(strategy, space, StrategyOptions().seed(seed).maximize(false));
  SequentialEngine engine([](TrialContext& t) { t.report_final(branin(t.parameters())); });
  return *run_search(*s, engine, 100, false)->metrics.final;
}

// Parameters of the first `n` suggestions, each observed (branin) before the next.
inline std::vector<nlohmann::json> suggestions(Strategy& s, int n, std::vector<Trial>* trials = nullptr) {
  std::vector<nlohmann::json> out;
  for (int i = 0; i < n; ++i) {
    Trial t;
    t.id = static_cast<int64_t>(trials ? trials->size() : out.size()) + 1;
    t.parameters = *s.suggest();
    t.status = TrialStatus::kTrained;
    t.metrics.final = branin(t.parameters);
    s.observe(t);
    out.push_back(t.parameters);
    if (trials) trials->push_back(t);
  }
  return out;
}

}  // namespace baton::space_fixtures
