// Property: whatever a search space file holds, reading it either refuses it with
// std::invalid_argument naming the file (exit 2 at the CLI), or every strategy's suggestions lie in
// it with finite numbers; each case within a second. Random spaces of every _type with wrong
// types, huge, tiny and non-finite bounds, nesting and aliases, in YAML and JSON. Seeded.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <random>

#include "baton/exec/strategy.h"

namespace baton {
namespace {

const std::vector<std::string> kTypes = {"choice",      "randint", "uniform", "quniform", "loguniform",
                                         "qloguniform", "normal",  "unknown", "[]",       "3"};
const std::vector<std::string> kNumbers = {"0",
                                           "1",
                                           "-1",
                                           "0.2",
                                           "0.8",
                                           "3",
                                           "1e-300",
                                           "1e300",
                                           "1.7e308",
                                           "-1.7e308",
                                           ".inf",
                                           "-.inf",
                                           ".nan",
                                           "9223372036854775807",
                                           "18446744073709551615",
                                           "1e999",
                                           "x",
                                           "[]",
                                           "{}",
                                           "null",
                                           "true"};

const std::vector<std::string> kGood = {"{_type: uniform, _value: [0, 1]}",
                                        "{_type: randint, _value: [-3, 7]}",
                                        "{_type: loguniform, _value: [1e-5, 1]}",
                                        "{_type: quniform, _value: [0, 10, 0.5]}",
                                        "{_type: qloguniform, _value: [1, 1000, 1]}",
                                        "{_type: normal, _value: [0, 1]}",
                                        "{_type: choice, _value: [a, 2, [3]]}",
                                        "{_type: uniform, _value: [-1e300, 1e300]}",
                                        "{_type: randint, _value: [9007199254740990, 9007199254740992]}"};

bool all_finite(const nlohmann::json& j) {
  if (j.is_number()) return std::isfinite(j.get<double>());
  if (j.is_object() || j.is_array()) {
    for (const auto& v : j) {
      if (!all_finite(v)) return false;
    }
  }
  return true;
}

class SpaceMaker {
 public:
  explicit SpaceMaker(uint64_t seed) : rng_(seed) {}
  std::string pick(const std::vector<std::string>& from) { return from[rng_() % from.size()]; }
  std::string values(int n) {
    std::string out = "[";
    for (int i = 0; i < n; ++i) out += (i ? ", " : "") + pick(kNumbers);
    return out + "]";
  }
  // One dimension's YAML, maybe a nested choice.
  std::string dimension(int depth) {
    const std::string type = pick(kTypes);
    if (type == "choice" && depth < 3 && rng_() % 3 == 0) {
      return "{_type: choice, _value: [{_name: a, " + ("p: " + dimension(depth + 1)) + "}, b]}";
    }
    if (rng_() % 25 == 0) return pick(kNumbers);  // not a mapping at all
    if (rng_() % 2 == 0) return pick(kGood);      // a good one, for the strategies to sample
    const int n = 1 + static_cast<int>(rng_() % 3);
    return "{_type: " + type + ", _value: " + values(n) + "}";
  }
  std::string space() {
    std::string out;
    const int dims = 1 + static_cast<int>(rng_() % 3);
    for (int d = 0; d < dims; ++d) out += "p" + std::to_string(d) + ": " + dimension(0) + "\n";
    if (rng_() % 15 == 0) {  // aliases of aliases
      out = "b0: &b0 [x, x, x, x, x, x, x, x]\n" + out;
      for (int i = 1; i < 9; ++i) {
        const std::string p = "*b" + std::to_string(i - 1);
        out = "b" + std::to_string(i) + ": &b" + std::to_string(i) + " [" + p + ", " + p + ", " + p + ", " + p + "]\n" +
              out;
      }
    }
    return out;
  }

 private:
  std::mt19937_64 rng_;
};

TEST(SpaceProperty, EveryRandomSpaceIsRefusedOrSampledInsideItWithFiniteNumbers) {
  SpaceMaker maker(20261125);
  int refused = 0, accepted = 0;
  for (int c = 0; c < 1000; ++c) {
    const std::string yaml = maker.space();
    const auto start = std::chrono::steady_clock::now();
    std::optional<SearchSpace> space;
    try {
      space = SearchSpace::from_json(SearchSpace::parse_text(yaml, false, "s.yaml"), "s.yaml");
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), ::testing::StartsWith("s.yaml")) << yaml;
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "case " << c << ": not std::invalid_argument: " << e.what() << "\n" << yaml;
    }
    if (space) {
      ++accepted;
      for (const std::string name : {"random", "tpe", "gp", "evolution"}) {
        auto strategy = make_strategy(name, *space, StrategyOptions().seed(static_cast<uint64_t>(c)));
        for (int t = 0; t < 3; ++t) {
          const auto p = strategy->suggest();
          if (!p) break;
          EXPECT_TRUE(space->contains(*p)) << name << " suggested " << p->dump() << " outside\n" << yaml;
          EXPECT_TRUE(all_finite(*p)) << name << " suggested " << p->dump() << "\n" << yaml;
        }
      }
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1)) << "case " << c << "\n" << yaml;
  }
  EXPECT_GT(refused, 100);
  EXPECT_GT(accepted, 20);
}

TEST(SpaceProperty, TheOutOfRangeExamplesAreRefusedWithTheirLocation) {
  auto why = [](const std::string& yaml) {
    try {
      SearchSpace::from_json(SearchSpace::parse_text(yaml, false, "s.yaml"), "s.yaml");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(why("x: {_type: randint, _value: [0.2, 0.8]}"),
            "s.yaml: 'x': randint takes whole numbers [low, high) (high excluded), got [0.2,0.8]");
  EXPECT_THAT(why("x: {_type: uniform, _value: [-1.7e308, 1.7e308]}"),
              ::testing::HasSubstr("is wider than a double can hold"));
  EXPECT_THAT(why("x: {_type: normal, _value: [0, .inf]}"), ::testing::HasSubstr("every number must be finite"));
  EXPECT_THAT(why("x: {_type: loguniform, _value: [0, 1]}"), ::testing::HasSubstr("needs low > 0"));
  EXPECT_THAT(why("x: {_type: randint, _value: [0, 1e300]}"), ::testing::HasSubstr("within +-2^53"));
  std::string deep;
  for (int i = 0; i < 20000; ++i) deep += R"({"c": {"_type": "choice", "_value": [{"_name": "n", "d": )";
  deep += R"({"x": {"_type": "uniform", "_value": [0, 1]}})";
  for (int i = 0; i < 20000; ++i) deep += "}]}}";
  EXPECT_EQ(why("unused"), "s.yaml: expected a mapping of parameter names to {_type, _value}");
  try {
    SearchSpace::parse_text(deep, true, "deep.json");
    ADD_FAILURE() << "20,000 nested choices accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "deep.json: nested deeper than 100 levels");
  }
}

}  // namespace
}  // namespace baton
