// Search spaces (src/exec/space.cpp): samples in their ranges, malformed spaces said, YAML and JSON
// files read.
#include <cmath>
#include <fstream>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "baton/exec/engine.h"
#include "baton/exec/gp.h"
#include "baton/exec/search.h"
#include "baton/exec/tpe.h"
#include "baton/io/file.h"
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
  baton::remove_tree(dir);
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
