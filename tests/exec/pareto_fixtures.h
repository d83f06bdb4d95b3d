// What nsga2_test.cpp and pareto_test.cpp share.
#pragma once

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

namespace baton::pareto_fixtures {

inline Trial trained(int64_t id, std::vector<double> values, std::vector<double> constraints = {}) {
  Trial t;
  t.id = id;
  t.status = TrialStatus::kTrained;
  t.metrics.final = values.front();
  if (values.size() > 1) t.metrics.values = values;
  t.metrics.constraints = std::move(constraints);
  return t;
}

inline SearchSpace zdt_space() {
  nlohmann::json space;
  for (int j = 0; j < 30; ++j) space["x" + std::to_string(j)] = {{"_type", "uniform"}, {"_value", {0.0, 1.0}}};
  return SearchSpace::from_json(space);
}

}  // namespace baton::pareto_fixtures
