// `baton search` as a library call (src/runs/search_run.cpp): a recipe's search run to its summary,
// its storage and its trials' folders; the strategies a user may name; flags that do not go
// together refused before a trial runs.
#include "baton/runs/search_run.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/exec/strategy.h"
#include "common/test_util.h"
#include "runs/recipes.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;
namespace fs = std::filesystem;

SearchRequest lr_search(const TempDir& dir, int64_t trials) {
  std::ofstream(dir.file("space.json")) << R"({"optimizer.lr": {"_type": "loguniform", "_value": [1.0e-4, 1.0e-2]}})";
  SearchRequest request;
  request.options.recipe(testing::text_gpt_recipe(dir, 60, "eval_interval: 2ba\n"))
      .space(dir.file("space.json"))
      .metric("eval/loss")
      .maximize(false)
      .trials(trials)
      .strategy("random")
      .seed(1)
      .run_dir(dir.path() / "search")
      .out(nullptr);
  request.fuse = 2;  // in this process: no `baton` program needed
  return request;
}

TEST(RunSearch, ARecipesSearchEndsWithItsSummaryStorageAndTrialFolders) {
  const TempDir dir("search_run");
  ASSERT_EQ(run_search(lr_search(dir, 3)), 0);
  const fs::path search = dir.path() / "search";
  const auto summary = nlohmann::json::parse(testing::read_file(search / "summary.json"));
  EXPECT_EQ(summary["trials"]["total"], 3);
  const double lr = summary["best"]["parameters"]["optimizer.lr"].get<double>();
  EXPECT_GE(lr, 1e-4);
  EXPECT_LE(lr, 1e-2);
  EXPECT_TRUE(fs::is_regular_file(search / "search.db"));
  int trials = 0;
  for (const auto& entry : fs::directory_iterator(search / "trials")) {
    trials += fs::is_regular_file(entry.path() / "summary.json") ? 1 : 0;
  }
  EXPECT_EQ(trials, 3);
}

TEST(RunSearch, TheStrategiesAUserMayNameAreExecsThenTheOneShotSearches) {
  const auto names = search_strategy_names();
  const auto exec = strategy_names();
  ASSERT_EQ(names.size(), exec.size() + 1);
  EXPECT_TRUE(std::equal(exec.begin(), exec.end(), names.begin()));
  EXPECT_EQ(names.back(), "spos");
  EXPECT_TRUE(is_one_shot_search("spos"));
  EXPECT_FALSE(is_one_shot_search("tpe"));
}

TEST(RunSearch, FlagsThatDoNotGoTogetherAreRefusedBeforeATrialRuns) {
  const TempDir dir("search_run");
  SearchRequest parallel = lr_search(dir, 2);
  parallel.options.parallel(2);
  EXPECT_THAT(error_of([&] { run_search(parallel); }), HasSubstr("--fuse 2: K trials run at once: no --parallel"));
  SearchRequest unknown = lr_search(dir, 2);
  unknown.options.strategy("tpee");
  EXPECT_THAT(error_of([&] { run_search(unknown); }), ::testing::AllOf(HasSubstr("tpee"), HasSubstr("spos")));
  EXPECT_FALSE(fs::exists(dir.path() / "search" / "trials"));
}

}  // namespace
}  // namespace baton
