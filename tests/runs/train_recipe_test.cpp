// `baton train` as a library call (src/runs/train_recipe.cpp): a recipe trained into its run folder
// (recipe.yaml, metrics, model.pt, summary.json), a second run there refused unless it resumes or
// starts over, a search trial's parameters applied and its metrics reported.
#include "baton/runs/train_recipe.h"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/train/recipe.h"
#include "common/test_util.h"
#include "runs/recipes.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;
namespace fs = std::filesystem;

std::string write_recipe(const TempDir& dir) {
  return testing::text_gpt_recipe(dir, 60, "eval_interval: 0\nsave_interval: 2ba\n");
}

nlohmann::json summary_of(const fs::path& run) {
  return nlohmann::json::parse(testing::read_file(run / "summary.json"));
}

TEST(TrainRecipe, ARunFolderGetsTheRecipeTheMetricsTheModelAndTheSummary) {
  const TempDir dir("train_recipe");
  const TrainRequest request{.recipe = write_recipe(dir), .run_dir = dir.file("run")};
  ASSERT_EQ(train_recipe(request), 0);
  const fs::path run = dir.path() / "run";
  for (const char* file : {"recipe.yaml", "model.pt", "summary.json", "metrics.jsonl"}) {
    EXPECT_TRUE(fs::is_regular_file(run / file)) << file;
  }
  const nlohmann::json summary = summary_of(run);
  EXPECT_EQ(summary["steps"], 4);
  for (const char* key : {"params_bytes", "grads_bytes", "optimizer_bytes", "peak_bytes"}) {
    EXPECT_GT(summary["memory"][key].get<int64_t>(), 0) << key;
  }
  EXPECT_EQ(summary["memory"]["optimizer_bytes"], 2 * summary["memory"]["params_bytes"].get<int64_t>());  // AdamW
  ASSERT_EQ(summary["memory_per_rank"].size(), 1U);
  EXPECT_EQ(summary["memory_per_rank"][0], summary["memory"]);
  EXPECT_THAT(testing::read_file(run / "recipe.yaml"), HasSubstr("max_duration: 4ba"));
}

TEST(TrainRecipe, ASecondRunIsRefusedUnlessItResumesOrStartsOver) {
  const TempDir dir("train_recipe");
  TrainRequest request{.recipe = write_recipe(dir), .run_dir = dir.file("run")};
  ASSERT_EQ(train_recipe(request), 0);
  const std::string model = testing::read_file(dir.path() / "run" / "model.pt");
  EXPECT_THAT(error_of([&] { train_recipe(request); }), HasSubstr("--autoresume"));
  EXPECT_EQ(testing::read_file(dir.path() / "run" / "model.pt"), model);  // nothing lost
  request.sets = {"max_duration=6ba"};
  request.autoresume = true;
  ASSERT_EQ(train_recipe(request), 0);
  EXPECT_EQ(summary_of(dir.path() / "run")["steps"], 6);
  request.autoresume = false;
  request.overwrite = true;
  ASSERT_EQ(train_recipe(request), 0);
  int aside = 0;
  for (const auto& entry : fs::directory_iterator(dir.path() / "run")) {
    aside += entry.path().filename().string().rfind("replaced-", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(aside, 1);
}

TEST(TrainRecipe, ATrialsParametersApplyAndItsMetricsAreReported) {
  const TempDir dir("train_recipe");
  RunLink link;
  link.parameters = {{"optimizer", {{"lr", 0.003}}}, {"max_duration", "3ba"}, {"eval_interval", "3ba"}};
  link.metrics = {"eval/loss"};
  std::vector<nlohmann::json> lines;
  link.report = [&](const nlohmann::json& line) { lines.push_back(line); };
  link.own_signals = false;
  ASSERT_EQ(train_recipe({.recipe = write_recipe(dir), .run_dir = dir.file("trial")}, link), 0);
  EXPECT_EQ(summary_of(dir.path() / "trial")["steps"], 3);
  EXPECT_THAT(testing::read_file(dir.path() / "trial" / "recipe.yaml"), HasSubstr("0.003"));
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(lines.back().contains("final")) << lines.back().dump();
  EXPECT_GT(lines.back()["final"].get<double>(), 0);
}

TEST(TrainRecipe, ParametersBecomeDottedOverridesAndNestedChoicesSetTheirName) {
  std::vector<std::string> sets;
  flatten_parameters(nlohmann::json::parse(R"({"lr": 0.1, "optimizer": {"_name": "sgd", "momentum": 0.9}})"), "", sets);
  EXPECT_EQ(sets, (std::vector<std::string>{"lr=0.1", "optimizer.name=sgd", "optimizer.momentum=0.9"}));
}

}  // namespace
}  // namespace baton
