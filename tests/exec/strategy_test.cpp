// The grid, random and evolution strategies (src/exec/strategy.cpp).
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

TEST(GridStrategy, EnumeratesEveryCombinationOnce) {
  const auto space = SearchSpace::from_json(nlohmann::json::parse(R"({
    "a": {"_type": "choice", "_value": [1, 2, 3]},
    "b": {"_type": "randint", "_value": [0, 2]},
    "c": {"_type": "loguniform", "_value": [0.001, 0.1]}})"));
  GridStrategy grid(space, 3);
  std::set<std::string> seen;
  while (auto p = grid.suggest()) EXPECT_TRUE(seen.insert(p->dump()).second);
  EXPECT_EQ(seen.size(), 3U * 2U * 3U);
  std::set<double> cs;
  for (const auto& text : seen) cs.insert(nlohmann::json::parse(text)["c"].get<double>());
  ASSERT_EQ(cs.size(), 3U);  // log-spaced
  EXPECT_NEAR(*cs.begin(), 0.001, 1e-12);
  EXPECT_NEAR(*std::next(cs.begin()), 0.01, 1e-9);
  EXPECT_NEAR(*cs.rbegin(), 0.1, 1e-12);
  EXPECT_THROW(make_strategy("gird", space, {}), std::invalid_argument);
}

TEST(Strategies, BadOptionsSayWhichAndWhatIsKnown) {
  const auto space = SearchSpace::from_json(nlohmann::json::parse(R"({"x": {"_type": "uniform", "_value": [0, 1]}})"));
  auto message = [&](const std::string& name, const nlohmann::json& settings) {
    try {
      make_strategy(name, space, StrategyOptions().settings(settings));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("tpe", {{"candidate", 4}}),
            "strategy tpe.candidate: unknown option (known: startup_trials, candidates, multivariate, prior_weight, "
            "max_rest, constant_liar, gamma, ei_weights, clip_exponent, min_bandwidth); did you mean 'candidates'?");
  EXPECT_EQ(message("tpe", {{"gamma", 1.5}}), "strategy tpe.gamma: expected a number > 0.0 and <= 1.0, got '1.5'");
  EXPECT_EQ(message("tpe", {{"min_bandwidth", 0.5}}),
            "strategy tpe.min_bandwidth: expected a number > 0.0 and <= 0.1, got '0.5'");
  EXPECT_EQ(message("gp", {{"candidates", "many"}}),
            "strategy gp.candidates: expected a whole number from 1 to 1000000, got 'many'");
  EXPECT_EQ(message("tpe", {{"prior_weight", -1}}), "strategy tpe.prior_weight: expected a number > 0.0, got '-1'");
  EXPECT_EQ(message("tpe", {{"multivariate", 1}}), "strategy tpe.multivariate: expected true or false, got '1'");
  EXPECT_EQ(message("random", {{"seed", 1}}), "strategy random.seed: unknown option (known: none)");
  EXPECT_EQ(message("tpe", 5), "strategy tpe: expected a mapping of keys to values, got '5'");
  EXPECT_EQ(message("gp", {{"local_starts", 0}, {"constant_liar", false}}), "no error");
  EXPECT_NE(message("gpp", {}).find("known: random, grid, tpe, motpe, gp, nsga2, cmaes, pbt, evolution"),
            std::string::npos);
}

TEST(Strategies, EvolutionIsSeededAndBeatsRandomOnBranin) {
  EXPECT_EQ(best_of("evolution", 3), best_of("evolution", 3));
  std::vector<double> evolution, random;
  for (uint64_t seed = 0; seed < 7; ++seed) {
    evolution.push_back(best_of("evolution", seed));
    random.push_back(best_of("random", seed));
  }
  std::sort(evolution.begin(), evolution.end());
  std::sort(random.begin(), random.end());
  EXPECT_LT(evolution[3], random[3]);
  EXPECT_THROW(EvolutionStrategy(SearchSpace::from_json({{"x", {{"_type", "uniform"}, {"_value", {0, 1}}}}}), 0, true,
                                 EvolutionOptions().population(1)),
               std::invalid_argument);
}

// Three choices of ten values each, {"x": 0..9, "y": ..., "z": ...}.
SearchSpace ten_cubed() {
  nlohmann::json values = nlohmann::json::array();
  for (int v = 0; v < 10; ++v) values.push_back(v);
  return SearchSpace::from_json({{"x", {{"_type", "choice"}, {"_value", values}}},
                                 {"y", {{"_type", "choice"}, {"_value", values}}},
                                 {"z", {{"_type", "choice"}, {"_value", values}}}});
}

Trial finished(int64_t id, int v, std::optional<double> value) {
  Trial t;
  t.id = id;
  t.parameters = {{"x", v}, {"y", v}, {"z", v}};
  t.status = value ? TrialStatus::kTrained : TrialStatus::kFailed;
  t.metrics.final = value;
  return t;
}

// How many of x, y, z the suggestion shares with the trial whose parameters are all `v`.
int shared_with(const nlohmann::json& p, int v) {
  return static_cast<int>(p["x"] == v) + static_cast<int>(p["y"] == v) + static_cast<int>(p["z"] == v);
}

TEST(Strategies, RegularizedEvolutionLetsTheOldestDieEvolutionTheWorst) {
  for (uint64_t seed = 0; seed < 10; ++seed) {
    // Population 2, both compared: after trials 0 (0.9), 5 (0.1), 9 (0.5) the parent is the best
    // of those alive: aging kills trial 0 (the oldest, though best), so 9 is the parent; without
    // aging 5 dies (the worst) and 0 is.
    for (const bool aging : {true, false}) {
      EvolutionStrategy s(ten_cubed(), seed, true, EvolutionOptions().population(2).sample_size(2).aging(aging));
      s.observe(finished(1, 0, 0.9));
      s.observe(finished(2, 5, 0.1));
      s.observe(finished(3, 9, 0.5));
      const auto child = *s.suggest();
      EXPECT_EQ(shared_with(child, aging ? 9 : 0), 2) << child.dump() << " aging " << aging;  // one drawn anew
    }
  }
  EXPECT_EQ(make_strategy("regularized_evolution", ten_cubed(), StrategyOptions())->name(), "regularized_evolution");
  EXPECT_EQ(make_strategy("evolution", ten_cubed(), StrategyOptions())->name(), "evolution");
}

TEST(Strategies, EvolutionMutatesAtTheGivenRateAndNeverRepeatsWhileOthersAreLeft) {
  // mutation_prob 1: every parameter drawn anew, each different from the parent's.
  EvolutionStrategy all(ten_cubed(), 3, true, EvolutionOptions().population(2).sample_size(1).mutation_prob(1.0));
  all.observe(finished(1, 4, 1.0));
  all.observe(finished(2, 4, 1.0));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(shared_with(*all.suggest(), 4), 0);
  // A choice of one value is never the one drawn anew: every child changes x.
  const auto fixed = SearchSpace::from_json(nlohmann::json::parse(
      R"({"x": {"_type": "choice", "_value": [0, 1, 2, 3]}, "f": {"_type": "choice", "_value": [7]},
          "g": {"_type": "choice", "_value": ["a"]}})"));
  EvolutionStrategy one(fixed, 1, true, EvolutionOptions().population(2).sample_size(1).dedup(false));
  for (int id = 1; id <= 2; ++id) {
    Trial t;
    t.id = id;
    t.parameters = {{"x", 0}, {"f", 7}, {"g", "a"}};
    t.status = TrialStatus::kTrained;
    t.metrics.final = 1.0;
    one.observe(t);
  }
  for (int i = 0; i < 20; ++i) EXPECT_NE((*one.suggest())["x"], 0);
  // Failed trials: left out (the population not yet full: random draws), or the worst.
  EvolutionStrategy worst(ten_cubed(), 3, true, EvolutionOptions().population(2).sample_size(2).failure_is_worst(true));
  worst.observe(finished(1, 7, 0.3));
  worst.observe(finished(2, 2, std::nullopt));
  EXPECT_EQ(shared_with(*worst.suggest(), 7), 2);  // a child of trial 1, the failed one worse
  // A space of 4: dedup suggests each once before any twice.
  const auto four = SearchSpace::from_json(nlohmann::json::parse(
      R"({"a": {"_type": "choice", "_value": [0, 1]}, "b": {"_type": "choice", "_value": [0, 1]}})"));
  for (const char* name : {"evolution", "regularized_evolution"}) {
    auto s = make_strategy(name, four, StrategyOptions().seed(5).settings({{"population", 2}, {"sample_size", 2}}));
    std::set<std::string> seen;
    for (int i = 0; i < 4; ++i) {
      Trial t;
      t.id = i + 1;
      t.parameters = *s->suggest();
      t.status = TrialStatus::kTrained;
      t.metrics.final = t.parameters["a"].get<int>() + 0.5 * t.parameters["b"].get<int>();
      seen.insert(t.parameters.dump());
      s->observe(t);
    }
    EXPECT_EQ(seen.size(), 4U) << name;
    EXPECT_TRUE(s->suggest().has_value()) << name;  // then repeats
  }
  auto message = [&](const nlohmann::json& settings) {
    try {
      make_strategy("regularized_evolution", four, StrategyOptions().settings(settings));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(
      message({{"on_failure", "retry"}}),
      "strategy regularized_evolution.on_failure: 'retry': expected ignore (a failed trial is left out) or worst");
  EXPECT_EQ(
      message({{"mutation_prob", 2}}),
      "strategy regularized_evolution.mutation_prob: expected a number from 0 (one parameter a mutation) to 1, got "
      "'2.0'");
  EXPECT_EQ(message({{"sample_size", 101}}),
            "regularized_evolution: need population >= 2 and 1 <= sample_size <= population");
}

// A space of 6 choices of 5 values whose score adds one term per choice (an architecture's ops):
// regularized evolution finds more of it than random search in 150 trials.
TEST(Strategies, RegularizedEvolutionBeatsRandomOnAnAdditiveSpaceOfChoices) {
  nlohmann::json definition;
  for (int d = 0; d < 6; ++d) definition["op" + std::to_string(d)] = {{"_type", "choice"}, {"_value", {0, 1, 2, 3, 4}}};
  const auto space = SearchSpace::from_json(definition);
  auto best = [&](const std::string& name, uint64_t seed) {
    auto s = make_strategy(
        name, space,
        StrategyOptions().seed(seed).settings(
            name == "random" ? nlohmann::json::object() : nlohmann::json{{"population", 20}, {"sample_size", 5}}));
    SequentialEngine engine([](TrialContext& t) {
      double score = 0;
      for (int d = 0; d < 6; ++d)
        score += std::sin(1.0 + d + 2.0 * t.parameters()["op" + std::to_string(d)].get<int>());
      t.report_final(score);
    });
    return *run_search(*s, engine, 150, true)->metrics.final;
  };
  std::vector<double> evolution, random;
  for (uint64_t seed = 0; seed < 7; ++seed) {
    evolution.push_back(best("regularized_evolution", seed));
    random.push_back(best("random", seed));
  }
  std::sort(evolution.begin(), evolution.end());
  std::sort(random.begin(), random.end());
  EXPECT_GT(evolution[3], random[3]);
}

}  // namespace
}  // namespace baton
