// A search of a model space (src/runs/model_space_search.cpp): the trials' space is the zoo space's
// choices under model.arch, narrowed by a space file; what does not fit is refused naming it.
#include "baton/runs/model_space_search.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/exec/experiment.h"
#include "common/test_util.h"
#include "runs/recipes.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;

TEST(ModelSpaceSearch, TheTrialsSpaceIsTheModelSpacesChoicesNarrowedByASpaceFile) {
  const TempDir dir("model_space_search");
  std::ofstream(dir.file("narrow.json")) << R"({"model.arch.stage1_width": {"_type": "choice", "_value": [16, 32]},
                                              "optimizer.lr": {"_type": "loguniform", "_value": [0.001, 0.1]}})";
  ExperimentOptions options = ExperimentOptions().recipe(testing::image_recipe(dir)).space(dir.file("narrow.json"));
  use_model_space("cnn_space", options);
  EXPECT_EQ(options.sets().front(), "model.name=cnn_space");
  const nlohmann::json& space = options.space_definition();
  EXPECT_EQ(space["model.arch.stage1_width"]["_value"], nlohmann::json::parse("[16, 32]"));
  EXPECT_EQ(space["model.arch.stage2_width"]["_value"], nlohmann::json::parse("[16, 32, 64]"));  // the space's own
  EXPECT_TRUE(space.contains("model.arch.stage3_op"));
  EXPECT_TRUE(space.contains("optimizer.lr"));  // other keys as they are
  EXPECT_THAT(options.space(), HasSubstr("model space cnn_space"));
}

TEST(ModelSpaceSearch, WhatDoesNotFitTheSpaceIsRefusedNamingIt) {
  const TempDir dir("model_space_search");
  const std::string recipe = testing::image_recipe(dir);
  ExperimentOptions no_recipe;
  EXPECT_THAT(error_of([&] { use_model_space("cnn_space", no_recipe); }), HasSubstr("add --recipe RECIPE"));
  ExperimentOptions other_model = ExperimentOptions().recipe(recipe).sets({"model.name=mlp"});
  EXPECT_THAT(error_of([&] { use_model_space("cnn_space", other_model); }),
              HasSubstr("--set model.name=mlp and --model-space cnn_space name two models"));
  ExperimentOptions unknown = ExperimentOptions().recipe(recipe);
  EXPECT_THAT(error_of([&] { use_model_space("cnn_spcae", unknown); }), HasSubstr("--model-space cnn_spcae: "));
  std::ofstream(dir.file("bad.json")) << R"({"model.arch.stage1_width": {"_type": "choice", "_value": [24]}})";
  ExperimentOptions not_candidate = ExperimentOptions().recipe(recipe).space(dir.file("bad.json"));
  EXPECT_THAT(error_of([&] { use_model_space("cnn_space", not_candidate); }),
              HasSubstr("model.arch.stage1_width: 24 is not one of the model space's candidates (16, 32, 64)"));
  std::ofstream(dir.file("none.json")) << R"({"model.arch.stage9_op": {"_type": "choice", "_value": ["conv3x3"]}})";
  ExperimentOptions no_choice = ExperimentOptions().recipe(recipe).space(dir.file("none.json"));
  EXPECT_THAT(error_of([&] { use_model_space("cnn_space", no_choice); }),
              HasSubstr("the model space cnn_space has no choice stage9_op"));
}

}  // namespace
}  // namespace baton
