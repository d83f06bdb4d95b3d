// run_search (src/exec/search.cpp): it stops at the trial count and restores from an engine.
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

namespace baton {
namespace {

TEST(RunSearch, StopsAtTheTrialCountAndRestoresFromAnEngine) {
  const auto space = SearchSpace::from_json(nlohmann::json::parse(R"({"x": {"_type": "uniform", "_value": [0, 1]}})"));
  auto s = make_strategy("random", space, StrategyOptions().seed(0));
  ThreadPoolEngine engine([](TrialContext& t) { t.report_final(t.parameters()["x"].get<double>()); }, 3);
  int progress_calls = 0;
  const auto best = run_search(*s, engine, 20, true, [&](const SearchProgress&) { ++progress_calls; });
  EXPECT_EQ(engine.list().size(), 20U);
  EXPECT_EQ(progress_calls, 20);
  for (const auto& t : engine.list()) EXPECT_LE(*t.metrics.final, *best->metrics.final);
  run_search(*s, engine, 25, true);  // counts the 20 already there
  EXPECT_EQ(engine.list().size(), 25U);
}

}  // namespace
}  // namespace baton
