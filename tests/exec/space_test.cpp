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

nlohmann::json example_space() {
  return nlohmann::json::parse(R"({
    "lr": {"_type": "loguniform", "_value": [1e-4, 1e-1]},
    "batch": {"_type": "choice", "_value": [32, 64, 128]},
    "layers": {"_type": "randint", "_value": [1, 4]},
    "dropout": {"_type": "quniform", "_value": [0.0, 0.5, 0.1]},
    "wd": {"_type": "qloguniform", "_value": [1e-5, 1e-2, 1e-5]},
    "noise": {"_type": "normal", "_value": [0.0, 1.0]},
    "momentum": {"_type": "uniform", "_value": [0.8, 0.99]},
    "optimizer": {"_type": "choice", "_value": [
      {"_name": "sgd", "nesterov": {"_type": "choice", "_value": [true, false]}},
      {"_name": "adam", "beta1": {"_type": "uniform", "_value": [0.8, 0.95]}},
      "lbfgs"]}
  })");
}

TEST(SearchSpace, SamplesStayInTheirRangesAndNestedChoicesAreSampled) {
  const auto space = SearchSpace::from_json(example_space());
  std::mt19937_64 rng(7);
  std::set<std::string> optimizers;
  std::set<int64_t> layers;
  for (int i = 0; i < 500; ++i) {
    const auto p = space.sample(rng);
    ASSERT_TRUE(space.contains(p)) << p.dump();
    EXPECT_GE(p["lr"].get<double>(), 1e-4);
    EXPECT_LE(p["lr"].get<double>(), 1e-1);
    EXPECT_TRUE(p["layers"].is_number_integer());
    layers.insert(p["layers"].get<int64_t>());
    const double d = p["dropout"].get<double>();
    EXPECT_NEAR(d * 10, std::round(d * 10), 1e-9);
    const auto& o = p["optimizer"];
    if (o.is_object()) {
      optimizers.insert(o["_name"].get<std::string>());
      if (o["_name"] == "sgd") {
        EXPECT_TRUE(o["nesterov"].is_boolean());
      }
      if (o["_name"] == "adam") {
        EXPECT_GE(o["beta1"].get<double>(), 0.8);
      }
    } else {
      optimizers.insert(o.get<std::string>());
    }
  }
  EXPECT_EQ(optimizers, (std::set<std::string>{"sgd", "adam", "lbfgs"}));
  EXPECT_EQ(layers, (std::set<int64_t>{1, 2, 3}));  // randint: [low, high)
  EXPECT_FALSE(space.contains({{"lr", 0.5}}));
}

TEST(SearchSpace, MalformedSpacesSayWhatAndWhere) {
  auto error = [](const char* text) {
    try {
      SearchSpace::from_json(nlohmann::json::parse(text), "space.json");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(R"({"lr": {"_type": "unifrom", "_value": [0, 1]}})"),
            "space.json: 'lr': unknown _type 'unifrom' (known: choice, randint, uniform, quniform, loguniform, "
            "qloguniform, normal); did you mean 'uniform'?");
  EXPECT_NE(error(R"({"lr": {"_type": "uniform", "_value": [1, 0]}})").find("low must be below high"),
            std::string::npos);
  EXPECT_NE(error(R"({"lr": {"_type": "loguniform", "_value": [0, 1]}})").find("needs low > 0"), std::string::npos);
  EXPECT_NE(error(R"({"lr": {"_type": "quniform", "_value": [0, 1]}})").find("takes 3 numbers"), std::string::npos);
  EXPECT_NE(error(R"({"lr": 0.1})").find("expected {_type"), std::string::npos);
  EXPECT_NE(error(R"({"lr": {"_type": "uniform", "_value": ["a", 1]}})").find("not a number"), std::string::npos);
  EXPECT_NE(error(R"({})").find("no parameters"), std::string::npos);
  EXPECT_NE(error(R"({"o": {"_type": "choice", "_value": [{"_name": "a", "x": {"_type": "x", "_value": [1]}}]}})")
                .find("'o[\"a\"].x'"),
            std::string::npos);
}

TEST(SearchSpace, ReadsYamlAndJsonFiles) {
  const baton::testing::TempDir dir_tmp("space");
  const std::filesystem::path dir = dir_tmp.path();
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "s.yaml")
      << "lr: {_type: loguniform, _value: [0.001, 0.1]}\nbs: {_type: choice, _value: [64, 128]}\n";
  std::ofstream(dir / "s.json") << R"({"lr": {"_type": "uniform", "_value": [0, 1]}})";
  std::ofstream(dir / "bad.yaml") << "lr: {_type: uniform, _value: [0, 1\n";
  EXPECT_EQ(SearchSpace::from_file(dir / "s.yaml").dimensions().size(), 2U);
  EXPECT_EQ(SearchSpace::from_file(dir / "s.json").dimensions().size(), 1U);
  try {
    SearchSpace::from_file(dir / "bad.yaml");
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind((dir / "bad.yaml").string() + ":", 0), 0U) << e.what();
  }
  EXPECT_THROW(SearchSpace::from_file(dir / "missing.yaml"), std::invalid_argument);
  std::filesystem::remove_all(dir);
}

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

double branin(const nlohmann::json& p) {
  const double x1 = p["x1"].get<double>(), x2 = p["x2"].get<double>();
  const double a = x2 - 5.1 / (4 * M_PI * M_PI) * x1 * x1 + 5 / M_PI * x1 - 6;
  return a * a + 10 * (1 - 1 / (8 * M_PI)) * std::cos(x1) + 10;
}

double best_of(const std::string& strategy, uint64_t seed) {
  const auto space = SearchSpace::from_json(nlohmann::json::parse(
      R"({"x1": {"_type": "uniform", "_value": [-5, 10]}, "x2": {"_type": "uniform", "_value": [0, 15]}})"));
  auto s = make_strategy(strategy, space, StrategyOptions().seed(seed).maximize(false));
  SequentialEngine engine([](TrialContext& t) { t.report_final(branin(t.parameters())); });
  return *run_search(*s, engine, 100, false)->metrics.final;
}

TEST(Strategies, SeededAndTpeBeatsRandomOnBranin) {
  EXPECT_EQ(best_of("tpe", 3), best_of("tpe", 3));
  EXPECT_NE(best_of("tpe", 3), best_of("tpe", 4));
  std::vector<double> tpe, random;
  for (uint64_t seed = 0; seed < 7; ++seed) {
    tpe.push_back(best_of("tpe", seed));
    random.push_back(best_of("random", seed));
  }
  std::sort(tpe.begin(), tpe.end());
  std::sort(random.begin(), random.end());
  EXPECT_LT(tpe[3], random[3]);  // the medians, 100 trials each
  EXPECT_LT(tpe[3], 0.397887 + 0.3);
}

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

// Parameters of the first `n` suggestions, each observed (branin) before the next.
std::vector<nlohmann::json> suggestions(Strategy& s, int n, std::vector<Trial>* trials = nullptr) {
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

TEST(Strategies, TpeKernelsStayWiderInAWiderSpace) {
  // 60 trials packed within 0.002 of one point in 8 dimensions, the best nearest its centre: a
  // crowd in which good and bad trials are alike. With the floor per dimension (4% of the range in
  // 8 dimensions) the next suggestions leave it to explore; with a flat 1% floor (Optuna's, and
  // baton's before) the kernels stay narrow enough that the slightly better good trials keep the
  // search inside the crowd, as in hartmann6's stuck seeds (bench/README.md).
  constexpr int d = 8;
  auto distance = [](double min_bandwidth) {  // min_bandwidth 0: the default
    nlohmann::json space_json;
    for (int k = 0; k < d; ++k) space_json["x" + std::to_string(k)] = {{"_type", "uniform"}, {"_value", {0.0, 1.0}}};
    const auto space = SearchSpace::from_json(space_json);
    double total = 0;
    int count = 0;
    for (uint64_t seed = 0; seed < 4; ++seed) {
      nlohmann::json settings = nlohmann::json::object();
      if (min_bandwidth > 0) settings["min_bandwidth"] = min_bandwidth;
      auto tpe = make_strategy("tpe", space, StrategyOptions().seed(seed).maximize(false).settings(settings));
      std::mt19937_64 rng(seed);
      std::uniform_real_distribution<double> jitter(-0.002, 0.002);
      for (int i = 0; i < 60; ++i) {
        Trial t;
        t.id = i + 1;
        double loss = 0;
        for (int k = 0; k < d; ++k) {
          const double x = 0.5 + jitter(rng);
          t.parameters["x" + std::to_string(k)] = x;
          loss += (x - 0.5) * (x - 0.5);
        }
        t.status = TrialStatus::kTrained;
        t.metrics.final = loss;
        tpe->observe(t);
      }
      for (int i = 0; i < 10; ++i, ++count) {
        const auto p = *tpe->suggest();
        for (int k = 0; k < d; ++k) total += std::abs(p["x" + std::to_string(k)].get<double>() - 0.5) / d;
      }
    }
    return total / count;
  };
  const double per_dimension = distance(0), flat = distance(0.01 / d);
  EXPECT_GT(per_dimension, 0.1);  // mean distance per coordinate; uniform draws: 0.25
  EXPECT_LT(flat, 0.05);
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

TEST(Strategies, TpeHandlesChoicesAndMaximizes) {
  const auto space = SearchSpace::from_json(nlohmann::json::parse(
      R"({"c": {"_type": "choice", "_value": ["a", "b", "c", "d"]}, "x": {"_type": "uniform", "_value": [0, 1]}})"));
  // Of the last 20 of 60 trials, how many pick the best choice (random: 5).
  auto late_c = [&](bool multivariate, uint64_t seed) {
    TpeStrategy tpe(space, TpeOptions().seed(seed).maximize(true).multivariate(multivariate));
    ThreadPoolEngine engine(
        [](TrialContext& t) {
          t.report_final((t.parameters()["c"] == "c" ? 1.0 : 0.0) + t.parameters()["x"].get<double>());
        },
        2);
    run_search(tpe, engine, 60, true);
    EXPECT_EQ(tpe.observations(), 60U);
    int n = 0;
    for (const auto& t : engine.list()) n += t.id >= 40 && t.parameters["c"] == "c";
    return n;
  };
  EXPECT_GE(late_c(false, 1), 12);  // per dimension: the choice's own ratio decides
  int joint = 0;                    // one kernel over both: the choice weighs less beside x
  for (uint64_t seed = 0; seed < 10; ++seed) joint += late_c(true, seed);
  EXPECT_GE(joint, 100);  // twice random's
}

TEST(Strategies, TpeReachesTheExactValueOfIntegersAndQuantizedParameters) {
  // x decides most; n and q refine: the optimum is at n = 3, q = 0.2. A kernel narrower than one
  // step stays on the value it was fitted to: once the good trials agree on a wrong n or q, only
  // kernels at least one step wide move them to the right one.
  const auto space = SearchSpace::from_json(nlohmann::json::parse(R"({"n": {"_type": "randint", "_value": [1, 6]},
      "q": {"_type": "quniform", "_value": [0, 0.5, 0.05]}, "x": {"_type": "uniform", "_value": [0, 1]}})"));
  int exact = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    auto tpe = make_strategy("tpe", space, StrategyOptions().seed(seed).maximize(false));
    double best = INFINITY;
    nlohmann::json at;
    SequentialEngine engine([&](TrialContext& t) {
      const auto& p = t.parameters();
      const double v = std::pow(p["x"].get<double>() - 0.5, 2) + 0.001 * std::pow(p["n"].get<double>() - 3, 2) +
                       0.01 * std::pow(p["q"].get<double>() - 0.2, 2);
      if (v < best) best = v, at = p;
      t.report_final(v);
    });
    run_search(*tpe, engine, 150, false);
    exact += at["n"] == 3 && std::abs(at["q"].get<double>() - 0.2) < 1e-9;
  }
  EXPECT_GE(exact, 8);
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

TEST(Strategies, TpeModelsTheInnerParametersOfNestedChoices) {
  // Branch a peaks at x = 0.9 (value 0); branch b at most -0.5. The inner parameter decides.
  const auto space = SearchSpace::from_json(nlohmann::json::parse(R"({"model": {"_type": "choice", "_value": [
      {"_name": "a", "x": {"_type": "uniform", "_value": [0, 1]}},
      {"_name": "b", "y": {"_type": "uniform", "_value": [0, 1]}}]}})"));
  auto late_mean = [&](const std::string& name, uint64_t seed) {
    auto strategy = make_strategy(name, space, StrategyOptions().seed(seed).maximize(true));
    SequentialEngine engine([](TrialContext& t) {
      const auto& m = t.parameters()["model"];
      if (m["_name"] == "a")
        t.report_final(-std::pow(m["x"].get<double>() - 0.9, 2));
      else
        t.report_final(-0.5 - std::pow(m["y"].get<double>() - 0.1, 2));
    });
    run_search(*strategy, engine, 80, true);
    double sum = 0;
    for (const auto& t : engine.list()) {
      EXPECT_TRUE(space.contains(t.parameters)) << t.parameters.dump();
      if (t.id >= 50) sum += *t.metrics.final;
    }
    return sum / 30;
  };
  for (uint64_t seed : {0, 1, 2}) {
    // Random (and a TPE that draws the inner x at random): about -0.3 over the last 30 trials.
    EXPECT_GT(late_mean("tpe", seed), -0.1) << "seed " << seed;
    EXPECT_LT(late_mean("random", seed), -0.15) << "seed " << seed;
  }
}

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

TEST(FuzzCorpus, SpaceReaderRefusesOrReadsEveryInput) {
  int spaces = 0;
  const int inputs =
      testing::for_each_corpus_input("space_reader", [&](const std::string& name, const std::string& text) {
        try {
          const SearchSpace space = SearchSpace::from_json(SearchSpace::parse_text(text, false, name), name);
          std::mt19937_64 rng(1);
          EXPECT_TRUE(space.contains(space.sample(rng))) << name;
          ++spaces;
        } catch (const std::invalid_argument&) {
        }
      });
  EXPECT_GE(inputs, 3);
  EXPECT_EQ(spaces, 3);
}

}  // namespace
}  // namespace baton
