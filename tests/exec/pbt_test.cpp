// Population-based training: the quantiles, the exploits (bottom takes top, the same for the same
// seed and round), exploring (perturb factors kept in range, choices moved to a neighbour,
// resampling), the options' refusals, and the loop on real trial processes whose "state" is a file:
// every exploit copies the other trial's state, and the population ends together.
#include "baton/exec/pbt.h"
#include "baton/io/file.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "baton/exec/process.h"
#include "baton/exec/registry.h"

namespace baton {
namespace {

SearchSpace lr_space() {
  return SearchSpace::from_json(nlohmann::json::parse(R"({
    "lr": {"_type": "loguniform", "_value": [0.001, 0.1]},
    "layers": {"_type": "randint", "_value": [1, 5]},
    "act": {"_type": "choice", "_value": ["relu", "gelu", "tanh"]}})"));
}

PbtOptions options(double resample = 0.0) {
  return PbtOptions().interval(Time::parse("10ba")).resample_probability(resample);
}

TEST(Pbt, QuantilesAreCeiledAndAtMostHalf) {
  PopulationBasedTraining pbt(lr_space(), 0, true, options());
  EXPECT_EQ(pbt.quantile_size(8), 2U);
  EXPECT_EQ(pbt.quantile_size(4), 1U);
  EXPECT_EQ(pbt.quantile_size(3), 1U);
  EXPECT_EQ(pbt.quantile_size(1), 0U);
  PopulationBasedTraining half(lr_space(), 0, true, options().quantile(0.5));
  EXPECT_EQ(half.quantile_size(5), 2U);
}

TEST(Pbt, TheBottomQuantileTakesATopTrialsParametersExplored) {
  PopulationBasedTraining pbt(lr_space(), 7, true, options());
  std::vector<PbtMember> members;
  for (int64_t i = 0; i < 8; ++i) {
    members.push_back(
        {i, {{"lr", 0.01 + 0.001 * static_cast<double>(i)}, {"layers", 2}, {"act", "gelu"}}, static_cast<double>(i)});
  }
  const auto decisions = pbt.exploit(3, members);
  ASSERT_EQ(decisions.size(), 2U);
  std::set<int64_t> exploited;
  for (const auto& d : decisions) {
    exploited.insert(d.id);
    EXPECT_TRUE(d.from == 6 || d.from == 7) << d.from;  // the top quantile, by a higher score
    EXPECT_EQ(d.from_score, static_cast<double>(d.from));
    const double lr = d.parameters["lr"].get<double>(), donor = 0.01 + 0.001 * static_cast<double>(d.from);
    EXPECT_TRUE(std::abs(lr - donor * 0.8) < 1e-12 || std::abs(lr - donor * 1.2) < 1e-12) << lr;
    const int layers = d.parameters["layers"].get<int>();
    EXPECT_TRUE(layers == 2 || layers == 3) << layers;  // 2 * 0.8 -> 2, 2 * 1.2 -> 2, rounded
    EXPECT_TRUE(d.parameters["act"] == "relu" || d.parameters["act"] == "tanh") << d.parameters;  // a neighbour
    EXPECT_TRUE(d.changes.contains("lr") &&
                d.changes["lr"][0] == members[static_cast<std::size_t>(d.id)].parameters["lr"]);
  }
  EXPECT_EQ(exploited, (std::set<int64_t>{0, 1}));
  // The same seed and round decide the same; another round differs somewhere.
  const auto again = pbt.exploit(3, members);
  for (std::size_t i = 0; i < again.size(); ++i) {
    EXPECT_EQ(again[i].parameters, decisions[i].parameters);
    EXPECT_EQ(again[i].from, decisions[i].from);
  }
  // Minimising: the highest scores are the bottom.
  PopulationBasedTraining min(lr_space(), 7, false, options());
  std::set<int64_t> low;
  for (const auto& d : min.exploit(0, members)) {
    low.insert(d.id);
    EXPECT_TRUE(d.from == 0 || d.from == 1);
  }
  EXPECT_EQ(low, (std::set<int64_t>{6, 7}));
}

TEST(Pbt, ExploringKeepsNumbersInTheirRangeAndResamplesFromTheSpace) {
  PopulationBasedTraining pbt(lr_space(), 1, true, options().perturb({10.0}));
  std::mt19937_64 rng(5);
  const auto up = pbt.explore({{"lr", 0.05}, {"layers", 4}, {"act", "tanh"}}, rng);
  EXPECT_DOUBLE_EQ(up["lr"].get<double>(), 0.1);  // 0.5, kept at the space's top
  EXPECT_EQ(up["layers"].get<int>(), 4);          // randint [1, 5): 4 at most
  EXPECT_TRUE(up["layers"].is_number_integer());
  PopulationBasedTraining fresh(lr_space(), 1, true, options(1.0));
  for (int i = 0; i < 50; ++i) {
    const auto p = fresh.explore({{"lr", 0.05}, {"layers", 4}, {"act", "tanh"}}, rng);
    EXPECT_TRUE(lr_space().contains(p)) << p;
  }
}

TEST(Pbt, OneStrategyOptionFlagMayHoldSeveral) {
  nlohmann::json settings = nlohmann::json::object();
  add_strategy_setting(settings, "population=8,interval=500ba,quantile=0.25,perturb=0.8:1.2,resample_probability=0.25");
  EXPECT_EQ(settings, (nlohmann::json{{"population", 8},
                                      {"interval", "500ba"},
                                      {"quantile", 0.25},
                                      {"perturb", "0.8:1.2"},
                                      {"resample_probability", 0.25}}));
  nlohmann::json list = nlohmann::json::object();
  add_strategy_setting(list, "ei_weights=[1,2]");  // a comma inside a value stays
  EXPECT_EQ(list["ei_weights"], nlohmann::json::array({1, 2}));
  EXPECT_THROW(add_strategy_setting(list, "=2,a=1"), std::invalid_argument);
}

TEST(Pbt, OptionsAreChecked) {
  auto make = [](nlohmann::json settings) {
    return make_strategy("pbt", lr_space(), StrategyOptions().settings(std::move(settings)));
  };
  EXPECT_THROW(
      {
        try {
          make(nlohmann::json::object());
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("needs interval=TIME"), std::string::npos) << e.what();
          throw;
        }
      },
      std::invalid_argument);
  EXPECT_THROW(make({{"interval", "0.5dur"}}), std::invalid_argument);
  EXPECT_THROW(make({{"interval", "10ba"}, {"quantile", 0.6}}), std::invalid_argument);
  EXPECT_THROW(make({{"interval", "10ba"}, {"population", 1}}), std::invalid_argument);
  EXPECT_THROW(make({{"interval", "10ba"}, {"perturb", "0.8:"}}), std::invalid_argument);
  EXPECT_THROW(make({{"interval", "10ba"}, {"resample_probability", 2}}), std::invalid_argument);
  auto pbt = make({{"interval", "2ep"}, {"perturb", "0.5:2"}, {"population", 3}});
  const auto& p = dynamic_cast<PopulationBasedTraining&>(*pbt);
  EXPECT_EQ(p.options().perturb(), (std::vector<double>{0.5, 2.0}));
  EXPECT_EQ(p.until(2).to_string(), "6ep");
  int n = 0;
  while (pbt->suggest()) ++n;
  EXPECT_EQ(n, 3);
  EXPECT_THROW(
      make_strategy("pbt", lr_space(), StrategyOptions().directions({true, false}).settings({{"interval", "10ba"}})),
      std::invalid_argument);
}

// A trial process whose state is a number in STATE_DIR/<id>: each interval adds its lr; it pauses at
// BATON_TRIAL_UNTIL until 30.
TEST(Pbt, TheLoopCopiesStatesAndEndsThePopulationTogether) {
  const auto dir = std::filesystem::temp_directory_path() / ("baton_pbt_" + std::to_string(::getpid()));
  baton::remove_tree(dir);
  std::filesystem::create_directories(dir);
  const std::string script = R"(
s="$STATE_DIR/$BATON_TRIAL_ID"; v=$(cat "$s" 2>/dev/null || echo 0)
lr=$(printf '%s' "$BATON_TRIAL_PARAMETERS" | sed 's/.*"lr":\([0-9.e-]*\).*/\1/')
v=$(awk -v a="$v" -v b="$lr" 'BEGIN { printf "%.17g", a + b }'); echo "$v" > "$s"
u=${BATON_TRIAL_UNTIL%ba}
echo "baton: {\"intermediate\": $v, \"step\": $u}"
if [ "$u" -lt 30 ]; then echo "baton: {\"final\": $v, \"paused\": true, \"step\": $u}"; else echo "baton: {\"final\": $v}"; fi
)";
  const auto space = SearchSpace::from_json(nlohmann::json::parse(R"({"lr": {"_type": "uniform", "_value": [0, 1]}})"));
  PopulationBasedTraining pbt(space, 3, true, PbtOptions().population(4).interval(Time::parse("10ba")));
  ProcessEngineOptions o;
  o.command(script).workers(2).env({{"STATE_DIR", dir.string()}});
  o.trial_env([&pbt](int64_t) {
    return ProcessEngineOptions::Env{{"BATON_TRIAL_UNTIL", pbt.until(pbt.round()).to_string()}};
  });
  ProcessEngine engine(o);
  std::vector<nlohmann::json> states;
  std::map<int64_t, double> copied;  // the exploiter's state right after its copy
  PbtHooks hooks;
  hooks.copy_state = [&](int64_t id, int64_t from) {
    std::filesystem::copy_file(dir / std::to_string(from), dir / std::to_string(id),
                               std::filesystem::copy_options::overwrite_existing);
    std::ifstream(dir / std::to_string(id)) >> copied[id];
  };
  hooks.save_state = [&](const nlohmann::json& s) { states.push_back(s); };
  const auto best = run_pbt(pbt, engine, nlohmann::json(), hooks);
  engine.shutdown();
  const auto trials = engine.list();
  ASSERT_EQ(trials.size(), 4U);
  int exploits = 0;
  for (const auto& t : trials) {
    EXPECT_EQ(t.status, TrialStatus::kTrained);
    EXPECT_FALSE(t.metrics.paused_at.has_value());
    ASSERT_EQ(t.metrics.intermediate.size(), 3U) << t.to_json();
    EXPECT_EQ(t.metrics.intermediate.back().step, 30);
    for (const auto& e : t.exploits) {
      ++exploits;
      EXPECT_NE(e.from, t.id);
      EXPECT_GE(e.from_score, e.score);
      EXPECT_EQ(e.at, e.step == 10 ? "10ba" : "20ba");
      // The next interval started from the other's state, with the parameters now its own.
      const auto& next = *std::find_if(t.metrics.intermediate.begin(), t.metrics.intermediate.end(),
                                       [&](const IntermediateValue& v) { return v.step == e.step + 10; });
      ASSERT_TRUE(e.changes.contains("lr")) << e.to_json();
      EXPECT_NEAR(next.value, e.from_score + e.changes["lr"][1].get<double>(), 1e-9);
      EXPECT_NEAR(copied[t.id], e.from_score, 1e-12);
    }
  }
  EXPECT_EQ(exploits, 2);  // one trial at each of the two interval ends
  ASSERT_FALSE(states.empty());
  EXPECT_EQ(states.back()["round"], 2);
  EXPECT_TRUE(states.back()["plan"]["copied"].get<bool>());
  ASSERT_TRUE(best.has_value());
  for (const auto& t : trials) EXPECT_LE(*t.metrics.final, *best->metrics.final);
  baton::remove_tree(dir);
}

}  // namespace
}  // namespace baton
