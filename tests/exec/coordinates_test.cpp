// The coordinates of the model-based strategies (src/exec/coordinates.cpp): ranges, values and
// coordinates inverse of each other, snapping, and a Latin hypercube that uses each stratum once.
#include "exec/coordinates.h"

#include <cmath>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "baton/exec/space.h"

namespace baton {
namespace {

std::vector<Dimension> dims() {
  return SearchSpace::from_json(nlohmann::json::parse(R"({
    "lr": {"_type": "loguniform", "_value": [1e-4, 1e-1]},
    "layers": {"_type": "randint", "_value": [2, 6]},
    "dropout": {"_type": "quniform", "_value": [0, 0.5, 0.1]},
    "opt": {"_type": "choice", "_value": ["sgd", "adam", "adamw"]}
  })"))
      .dimensions();
}

const Dimension& named(const std::vector<Dimension>& all, const std::string& name) {
  for (const Dimension& d : all) {
    if (d.name == name) return d;
  }
  throw std::out_of_range(name);
}

TEST(Coordinates, RangesValuesAndCoordinatesAreInverse) {
  const auto all = dims();
  const Dimension& lr = named(all, "lr");
  EXPECT_TRUE(coordinates::is_log(lr));
  const auto [low, high] = coordinates::range_of(lr);
  EXPECT_DOUBLE_EQ(low, std::log(1e-4));
  EXPECT_DOUBLE_EQ(high, std::log(1e-1));
  EXPECT_NEAR(coordinates::value_of(lr, coordinates::coordinate_of(lr, 0.003)).get<double>(), 0.003, 1e-12);
  const Dimension& layers = named(all, "layers");  // randint: high exclusive, widened by 0.5
  EXPECT_EQ(coordinates::range_of(layers), (std::pair<double, double>{1.5, 5.5}));
  EXPECT_EQ(coordinates::value_of(layers, 4.4), 4);
  EXPECT_DOUBLE_EQ(coordinates::snap(layers, 4.4), 4.0);
  EXPECT_NEAR(coordinates::snap(named(all, "dropout"), 0.26), 0.3, 1e-12);
  const Dimension& opt = named(all, "opt");
  EXPECT_EQ(coordinates::value_of(opt, 1), "adam");
  EXPECT_EQ(coordinates::coordinate_of(opt, "adamw"), 2);
  EXPECT_EQ(coordinates::coordinate_of(opt, "rmsprop"), -1);
  EXPECT_TRUE(std::isnan(coordinates::coordinate_of(lr, "fast")));
}

TEST(Coordinates, ParametersOfTheSpaceHaveCoordinatesOthersNone) {
  const auto all = dims();
  const auto x = coordinates::of(all, {{"lr", 0.01}, {"layers", 3}, {"dropout", 0.2}, {"opt", "sgd"}});
  ASSERT_TRUE(x.has_value());
  ASSERT_EQ(x->size(), all.size());
  EXPECT_FALSE(coordinates::of(all, {{"lr", 0.01}}).has_value());  // a parameter missing
  EXPECT_FALSE(coordinates::of(all, {{"lr", 0.01}, {"layers", 3}, {"dropout", 0.2}, {"opt", "rmsprop"}}).has_value());
}

TEST(Coordinates, ALatinHypercubeUsesEachStratumOnceAndEachChoiceInTurn) {
  const auto all = dims();
  std::mt19937_64 rng(7);
  const std::size_t n = 6;
  const coordinates::LatinHypercube cube(all, n, rng);
  EXPECT_EQ(cube.size(), n);
  std::vector<std::set<int>> strata(all.size());
  std::vector<int> choice_counts(3);
  for (std::size_t j = 0; j < n; ++j) {
    const auto point = cube.point(j, rng);
    ASSERT_EQ(point.size(), all.size());
    for (std::size_t d = 0; d < all.size(); ++d) {
      if (all[d].type == "choice") {
        ++choice_counts[static_cast<std::size_t>(point[d])];
        continue;
      }
      const auto [low, high] = coordinates::range_of(all[d]);
      ASSERT_GE(point[d], low);
      ASSERT_LE(point[d], high);
      strata[d].insert(std::min(static_cast<int>((point[d] - low) / (high - low) * n), static_cast<int>(n) - 1));
    }
  }
  // A continuous dimension uses every stratum once (integers and quantized values are snapped after).
  const auto lr = static_cast<std::size_t>(&named(all, "lr") - all.data());
  EXPECT_EQ(strata[lr].size(), n);
  EXPECT_EQ(choice_counts, (std::vector<int>{2, 2, 2}));
}

}  // namespace
}  // namespace baton
