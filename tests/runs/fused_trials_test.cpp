// Fused trials (src/runs/fused_trials.cpp): trials of one recipe training at once in this process
// over one data stream, each its own trial; what cannot share the stream refused saying why; the
// report of what the stream made.
#include "baton/runs/fused_trials.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/exec/experiment.h"
#include "baton/train/fused.h"
#include "common/test_util.h"
#include "runs/recipes.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;
namespace fs = std::filesystem;

ExperimentOptions lr_search(const TempDir& dir, const std::string& space) {
  std::ofstream(dir.file("space.json")) << space;
  return ExperimentOptions()
      .recipe(testing::text_gpt_recipe(dir, 60, "eval_interval: 2ba\n"))
      .space(dir.file("space.json"))
      .metric("eval/loss")
      .maximize(false)
      .trials(2)
      .strategy("random")
      .run_dir(dir.path() / "search")
      .out(nullptr);
}

const char* kLrSpace = R"({"optimizer.lr": {"_type": "loguniform", "_value": [1.0e-4, 1.0e-2]}})";

TEST(FusedTrials, TrialsTrainInThisProcessEachWithItsFolderAndTheStreamIsReported) {
  const TempDir dir("fused");
  ExperimentOptions options = lr_search(dir, kLrSpace);
  const auto fused = use_fused_trials(options, 2);
  EXPECT_EQ(options.engine(), "fused");
  EXPECT_EQ(options.parallel(), 2);
  const ExperimentResult result = Experiment(options).run();
  ASSERT_TRUE(result.best.has_value());
  for (int id : {0, 1}) {
    EXPECT_TRUE(fs::is_regular_file(dir.path() / "search" / "trials" / std::to_string(id) / "model.pt")) << id;
  }
  write_fused_report(*fused, 2, dir.path() / "search");
  const auto report = nlohmann::json::parse(testing::read_file(dir.path() / "search" / "fused.json"));
  EXPECT_EQ(report["fuse"], 2);
  EXPECT_EQ(report["batches_taken"], 8);  // 4 batches a trial
  EXPECT_GE(report["batches_made"].get<int64_t>(), 4);
  EXPECT_LE(report["batches_made"].get<int64_t>(), 8);
  EXPECT_GT(report["process_cpu_seconds"].get<double>(), 0);
}

TEST(FusedTrials, WhatCannotShareOneStreamIsRefusedSayingWhy) {
  const TempDir dir("fused");
  ExperimentOptions varies = lr_search(dir, R"({"data.batch_size": {"_type": "choice", "_value": [8, 16]}})");
  EXPECT_THAT(error_of([&] { use_fused_trials(varies, 2); }),
              HasSubstr("--fuse 2: the fused trials share one data set, batch size and order, and one model space, "
                        "but the space varies data.batch_size"));
  ExperimentOptions command = lr_search(dir, kLrSpace);
  command.recipe("").command("echo 1");
  EXPECT_THAT(error_of([&] { use_fused_trials(command, 2); }), HasSubstr("add --recipe"));
  ExperimentOptions many = lr_search(dir, kLrSpace);
  EXPECT_THAT(error_of([&] { use_fused_trials(many, 65); }), HasSubstr("expected 1 to 64 trials at once"));
  ExperimentOptions pbt = lr_search(dir, kLrSpace);
  pbt.strategy("pbt");
  EXPECT_THAT(error_of([&] { use_fused_trials(pbt, 2); }), HasSubstr("--strategy pbt is not fused"));
  EXPECT_EQ(pbt.engine(), "");  // a refused call changes nothing
}

}  // namespace
}  // namespace baton
