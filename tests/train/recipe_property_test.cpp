// Property: whatever a recipe holds, reading it and building its trainer either works or ends in
// an error the CLI turns into exit 2 (RecipeError, CheckpointError, FileError, invalid_argument),
// each case within a second: random YAML trees made from a good recipe by putting wrong types,
// huge and non-finite numbers, deep nesting and aliases of aliases at random keys. Seeded: a
// failure prints its recipe, and the same seed makes it again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>

#include <torch/torch.h>

#include "baton/data/readers.h"
#include "baton/io/file.h"
#include "baton/train/checkpoint_error.h"
#include "baton/train/recipe.h"
#include "baton/train/trainer.h"
#include "common/test_util.h"
#include "train/recipe_section.h"

namespace baton {
namespace {
namespace fs = std::filesystem;

// Values a careless or hostile user writes, as YAML text.
const std::vector<std::string> kJunk = {"-1",
                                        "0",
                                        "1",
                                        "3.5",
                                        "1e308",
                                        "-1e308",
                                        "1e999",
                                        ".inf",
                                        "-.inf",
                                        ".nan",
                                        "9223372036854775807",
                                        "9223372036854775808",
                                        "18446744073709551615",
                                        "-9223372036854775809",
                                        "[]",
                                        "{}",
                                        "[1, [2, [3]]]",
                                        "{a: 1}",
                                        "''",
                                        "x",
                                        "true",
                                        "null",
                                        "~",
                                        "0ba",
                                        "-5ep",
                                        "1e30ep",
                                        "3tok",
                                        "0.5dur",
                                        "90s",
                                        "/dev/zero",
                                        "../../x",
                                        "\"\\0\"",
                                        "[0]",
                                        "[100000000]",
                                        "[-3, 2]",
                                        "{name: mlp}",
                                        "!!binary aGk=",
                                        "'ep{epoch}'",
                                        std::string(150, '[') + std::string(150, ']'),
                                        std::string(5000, 'y')};

// Every key a recipe knows (sections as dotted paths; the sections themselves too), and a few it
// does not.
std::vector<std::string> all_keys() {
  namespace r = recipe_detail;
  std::vector<std::string> keys;
  for (const auto& key : r::kTopKeys) {
    if (key != "save_folder") keys.push_back(key);  // read-only here: a folder of junk's name would be made
  }
  const std::vector<std::string> data_keys = baton::data_keys();
  for (const auto& [section, known] :
       {std::pair{"data", &data_keys}, std::pair{"model", &r::kModelKeys}, std::pair{"optimizer", &r::kOptimizerKeys},
        std::pair{"scheduler", &r::kSchedulerKeys}}) {
    for (const auto& key : *known) keys.push_back(std::string(section) + "." + key);
  }
  for (const char* extra : {"algorithms.label_smoothing", "algorithms.mixup", "callbacks.threshold_stopper",
                            "unknown_key", "data.unknown"}) {
    keys.push_back(extra);
  }
  return keys;
}

// A bomb: 9^k copies of a string once expanded.
std::string alias_bomb(int levels) {
  std::string s = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= levels; ++i) {
    const std::string p = "*a" + std::to_string(i - 1);
    s += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + p;
    for (int k = 0; k < 8; ++k) s += ", " + p;
    s += "]\n";
  }
  return s;
}

class RecipeProperty : public ::testing::Test {
 protected:
  void SetUp() override {
    write_npy((dir_ / "x.npy").string(), torch::randn({16, 4}));
    write_npy((dir_ / "y.npy").string(), torch::arange(16) % 2);
    // Whatever a case would write lands here, not where the tests run.
    previous_ = fs::current_path();
    fs::current_path(dir_);
  }
  void TearDown() override { fs::current_path(previous_); }

  // The good recipe as a map of dotted keys to YAML values, before mutation.
  std::map<std::string, std::string> base() const {
    return {{"max_duration", "2ba"},
            {"eval_interval", "0"},
            {"progress_bar", "false"},
            {"console_log_interval", "0ep"},
            {"data.dataset", "files"},
            {"data.train_inputs", (dir_ / "x.npy").string()},
            {"data.train_labels", (dir_ / "y.npy").string()},
            {"data.batch_size", "4"},
            {"model.name", "mlp"},
            {"model.hidden", "[8]"},
            {"optimizer.name", "sgd"},
            {"optimizer.lr", "0.1"}};
  }

  static std::string to_yaml(const std::map<std::string, std::string>& keys) {
    std::map<std::string, std::vector<std::string>> sections;
    std::string top;
    for (const auto& [key, value] : keys) {
      const auto dot = key.find('.');
      if (dot == std::string::npos) {
        top += key + ": " + value + "\n";
      } else {
        sections[key.substr(0, dot)].push_back("  " + key.substr(dot + 1) + ": " + value + "\n");
      }
    }
    for (const auto& [section, lines] : sections) {
      if (keys.count(section)) continue;  // the section itself was replaced by a value
      top += section + ":\n";
      for (const auto& l : lines) top += l;
    }
    return top;
  }

  testing::TempDir tmp_{"recipe_property"};
  fs::path dir_ = tmp_.path(), previous_;
};

// What the CLI answers with exit 2; anything else (c10::Error, runtime_error) is exit 1 or worse.
bool is_bad_input(const std::exception& e) {
  return dynamic_cast<const RecipeError*>(&e) || dynamic_cast<const CheckpointError*>(&e) ||
         dynamic_cast<const FileError*>(&e) || dynamic_cast<const std::invalid_argument*>(&e);
}

TEST_F(RecipeProperty, EveryRandomRecipeTrainsOrIsRefusedAsBadInputWithinASecond) {
  const std::vector<std::string> keys = all_keys();
  std::mt19937_64 rng(20261125);
  int refused = 0, built = 0;
  for (int c = 0; c < 500; ++c) {
    auto keys_of_case = base();
    const int mutations = 1 + static_cast<int>(rng() % 3);
    for (int m = 0; m < mutations; ++m) keys_of_case[keys[rng() % keys.size()]] = kJunk[rng() % kJunk.size()];
    std::string yaml = to_yaml(keys_of_case);
    if (rng() % 10 == 0) yaml = alias_bomb(3 + static_cast<int>(rng() % 6)) + yaml;
    const auto start = std::chrono::steady_clock::now();
    try {
      TrainingRun run = build_run(Recipe::parse(yaml, "r.yaml"));
      Trainer trainer(run.options);
      ++built;
    } catch (const std::exception& e) {
      EXPECT_TRUE(is_bad_input(e)) << "case " << c << ": not a bad-input error: " << e.what() << "\n" << yaml;
      EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr("INTERNAL ASSERT"))) << yaml;
      EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr("json.exception"))) << yaml;
      EXPECT_THAT(e.what(), ::testing::Not(::testing::HasSubstr("bad conversion"))) << yaml;
      ++refused;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1)) << "case " << c << "\n" << yaml;
  }
  EXPECT_GT(refused, 100);  // the junk is junk
  EXPECT_GT(built, 10);     // and harmless junk at a harmless key still trains
}

TEST_F(RecipeProperty, AliasBombsAndDeepNestingAreRefusedNamingTheFile) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(testing::error_of([&] { Recipe::parse(alias_bomb(12), "bomb.yaml"); }),
              ::testing::MatchesRegex("bomb\\.yaml:[0-9]+:[0-9]+: more than 200000 values once its aliases are "
                                      "expanded.*"));
  EXPECT_THAT(
      testing::error_of([&] { Recipe::parse("a: " + std::string(1000, '[') + std::string(1000, ']'), "deep.yaml"); }),
      ::testing::StartsWith("deep.yaml:"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

}  // namespace
}  // namespace baton

namespace baton {
namespace {

// A recipe's YAML gives the numbers JSON would: the largest seed is read whole, not as a float.
TEST(RecipeNumbers, EveryWholeNumberOfSixtyFourBitsIsReadExactly) {
  const Recipe recipe =
      Recipe::parse("seed: 18446744073709551615\nrun_name: -9223372036854775808\nlog_interval: 1e300\n", "r.yaml");
  OptionReader top = recipe_detail::recipe_reader(recipe.root(), recipe.source(), recipe.set_keys());
  EXPECT_EQ(top.get<uint64_t>("seed", 0), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(top.get<int64_t>("run_name", 0), std::numeric_limits<int64_t>::min());
  EXPECT_THAT(testing::error_of([&] { top.get<int64_t>("seed", 0); }),
              ::testing::HasSubstr("seed: expected a whole number that fits, got '18446744073709551615'"));
  EXPECT_THAT(testing::error_of([&] { top.get<uint64_t>("log_interval", 0); }),
              ::testing::HasSubstr("log_interval: expected a whole number, got '1e+300'"));
}

}  // namespace
}  // namespace baton
