// Recipe files (src/train/recipe_file.cpp): unknown keys, malformed YAML, folders, duplicate keys and
// --set overrides said with file, line and column.
#include "baton/io/file.h"
#include "baton/train/recipe.h"

#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/data/images.h"
#include "baton/data/readers.h"
#include "baton/data/tokens.h"
#include "baton/models/safetensors.h"
#include "baton/models/zoo.h"
#include "baton/train/trainer.h"
#include "common/test_util.h"

namespace baton {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using testing::error_of;

TEST(Recipe, UnknownKeysAreErrorsWithFileLineAndColumn) {
  const std::string yaml = "max_duration: 1ep\noptimizer:\n  name: sgd\n  lrr: 0.1\n";
  EXPECT_THAT(error_of([&] { Recipe::parse(yaml, "r.yaml"); }),
              StartsWith("r.yaml:4:3: unknown key 'optimizer.lrr' (known in optimizer: name, lr,"));
  EXPECT_THAT(error_of([&] { Recipe::parse("epochs: 3\n", "r.yaml"); }),
              StartsWith("r.yaml:1:1: unknown key 'epochs'"));
}

TEST(Recipe, MalformedYamlNamesTheLine) {
  EXPECT_THAT(error_of([&] { Recipe::parse("model:\n  name: [fashion_cnn\n", "bad.yaml"); }), StartsWith("bad.yaml:"));
  EXPECT_THAT(error_of([&] { Recipe::parse("model:\n  name: [fashion_cnn\n", "bad.yaml"); }),
              HasSubstr("not valid YAML"));
}

TEST(Recipe, AFolderADuplicateKeyAndADeepSetAreErrorsThatSayWhere) {
  const baton::testing::TempDir dir_tmp("recipe_dir");
  const std::filesystem::path dir = dir_tmp.path();
  std::filesystem::create_directories(dir);
  EXPECT_THAT(error_of([&] { Recipe::load(dir.string()); }), HasSubstr(": a folder, not a recipe file"));
  baton::remove_tree(dir);
  EXPECT_THAT(error_of([] { Recipe::parse("seed: 1\noptimizer:\n  lr: 0.1\n  lr: 0.5\n", "r.yaml"); }),
              StartsWith("r.yaml:4:3: key 'optimizer.lr' is given twice (first at line 3); keep one"));
  EXPECT_THAT(error_of([] { Recipe::parse("seed: 1\nseed: 2\n", "r.yaml"); }),
              StartsWith("r.yaml:2:1: key 'seed' is given twice (first at line 1)"));
  EXPECT_THAT(error_of([] { Recipe::parse("", "r.yaml", {"a.b.c.d=1"}); }),
              StartsWith("--set a.b.c.d: unknown key 'a'"));
}

TEST(Recipe, SetOverridesAndIsNamedInErrors) {
  const Recipe r = Recipe::parse("optimizer:\n  lr: 0.1\n", "r.yaml", {"optimizer.lr=0.5", "model.name=mlp"});
  EXPECT_THAT(r.resolved_yaml(), HasSubstr("lr: 0.5"));
  EXPECT_THAT(r.resolved_yaml(), HasSubstr("name: mlp"));
  EXPECT_THAT(error_of([&] { Recipe::parse("", "r.yaml", {"optimizer.lrr=1"}); }),
              StartsWith("--set optimizer.lrr: unknown key 'optimizer.lrr'"));
  EXPECT_THAT(error_of([&] { Recipe::parse("", "r.yaml", {"max_duration"}); }), HasSubstr("expected key=value"));
}

}  // namespace
}  // namespace baton
