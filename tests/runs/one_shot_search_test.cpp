// Single-path one-shot search (src/runs/one_shot_search.cpp): a supernet trained once, architectures
// evaluated with the weights they inherit as trials, the best retrained; bad settings refused before
// the supernet trains.
#include "baton/runs/one_shot_search.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/exec/experiment.h"
#include "baton/runs/model_space_search.h"
#include "common/test_util.h"
#include "runs/recipes.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;
namespace fs = std::filesystem;

ExperimentOptions spos(const TempDir& dir, std::vector<std::string> settings) {
  // A supernet shares the weights of layer choices, not of widths: one width a stage.
  std::ofstream(dir.file("widths.json")) << R"({"model.arch.stage1_width": {"_type": "choice", "_value": [16]},
                                              "model.arch.stage2_width": {"_type": "choice", "_value": [16]},
                                              "model.arch.stage3_width": {"_type": "choice", "_value": [16]}})";
  ExperimentOptions options = ExperimentOptions()
                                  .recipe(testing::image_recipe(dir, "eval_interval: 4ba\n"))
                                  .space(dir.file("widths.json"))
                                  .metric("eval/accuracy")
                                  .trials(3)
                                  .strategy("spos")
                                  .strategy_options(std::move(settings))
                                  .run_dir(dir.path() / "search")
                                  .out(nullptr);
  use_model_space("cnn_space", options);
  return options;
}

int run_experiment(Experiment& experiment, const ExperimentOptions&, ExperimentResult& result) {
  result = experiment.run();
  return result.best ? 0 : 1;
}

TEST(OneShotSearch, ASupernetTrainsOnceItsPathsAreTrialsAndTheBestIsRetrained) {
  const TempDir dir("spos");
  const ExperimentOptions options =
      spos(dir, {"supernet_duration=4ba", "recalibrate_batches=1", "population=2", "sample_size=1"});
  ASSERT_EQ(one_shot_search(options, run_experiment), 0);
  const fs::path search = dir.path() / "search";
  EXPECT_TRUE(fs::is_regular_file(search / "supernet.ckpt"));
  const auto report = nlohmann::json::parse(testing::read_file(search / "spos.json"));
  EXPECT_EQ(report["search"]["trials"], 3);
  const double inherited = report["search"]["best"]["inherited"].get<double>();
  EXPECT_GE(inherited, 0.0);
  EXPECT_LE(inherited, 1.0);
  EXPECT_TRUE(report["retrain"].contains("eval/accuracy"));
}

TEST(OneShotSearch, BadSettingsAreRefusedBeforeTheSupernetTrains) {
  const TempDir dir("spos");
  EXPECT_THAT(error_of([&] { one_shot_search(spos(dir, {"sampling=roundrobin"}), run_experiment); }),
              HasSubstr("--strategy-option sampling=\"roundrobin\": expected uniform or fair"));
  EXPECT_THAT(error_of([&] { one_shot_search(spos(dir, {"supernet_duration=soon"}), run_experiment); }),
              HasSubstr("expected a duration (2000ba, 3ep)"));
  EXPECT_THAT(error_of([&] { one_shot_search(spos(dir, {"warmup=3"}), run_experiment); }),
              HasSubstr("spos's options are supernet_duration, sampling"));
  ExperimentOptions parallel = spos(dir, {});
  parallel.parallel(2);
  EXPECT_THAT(error_of([&] { one_shot_search(parallel, run_experiment); }), HasSubstr("no --parallel"));
  EXPECT_FALSE(fs::exists(dir.path() / "search" / "supernet.ckpt"));
}

}  // namespace
}  // namespace baton
