// Parameter importance on the dashboard (src/dashboard/importance.cpp): the share of the value's
// variance a parameter's bins explain beyond chance, nested choices flattened; nothing from too few
// trials.
#include <random>

#include <gtest/gtest.h>

#include "dashboard/sources.h"

namespace baton {
namespace {

nlohmann::json trial(double lr, const std::string& optimizer, double momentum, double noise_value, double value) {
  return {{"status", "trained"},
          {"final", value},
          {"parameters",
           {{"lr", lr}, {"noise", noise_value}, {"optimizer", {{"_name", optimizer}, {"momentum", momentum}}}}}};
}

TEST(ParameterImportance, TheParameterThatDecidesTheValueRanksFirstAndNoiseNearZero) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  nlohmann::json trials = nlohmann::json::array();
  for (int i = 0; i < 60; ++i) {
    const double lr = u(rng);
    const std::string optimizer = i % 2 ? "sgd" : "adam";
    trials.push_back(trial(lr, optimizer, u(rng), u(rng), 10 * lr + (optimizer == "sgd" ? 1.0 : 0.0) + 0.01 * u(rng)));
  }
  trials.push_back({{"status", "failed"}, {"parameters", {{"lr", 0.5}}}});  // not counted
  const nlohmann::json ranked = dashboard::parameter_importance(trials);
  ASSERT_EQ(ranked.size(), 4U);  // lr, noise, optimizer, optimizer.momentum
  EXPECT_EQ(ranked[0]["parameter"], "lr");
  EXPECT_GT(ranked[0]["importance"].get<double>(), 0.8);
  EXPECT_EQ(ranked[1]["parameter"], "optimizer");
  for (std::size_t i = 2; i < ranked.size(); ++i) {
    EXPECT_LT(ranked[i]["importance"].get<double>(), 0.05) << ranked[i]["parameter"];
  }
}

TEST(ParameterImportance, FewerThanEightFinishedTrialsOrNoVarianceSayNothing) {
  nlohmann::json few = nlohmann::json::array();
  for (int i = 0; i < 7; ++i) few.push_back(trial(0.1 * i, "sgd", 0.9, 0.5, i));
  EXPECT_TRUE(dashboard::parameter_importance(few).empty());
  nlohmann::json flat = nlohmann::json::array();
  for (int i = 0; i < 20; ++i) flat.push_back(trial(0.01 * i, "sgd", 0.9, 0.5, 1.0));
  EXPECT_TRUE(dashboard::parameter_importance(flat).empty());
}

}  // namespace
}  // namespace baton
