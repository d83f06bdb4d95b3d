// What `baton eval`, `predict`, `export` and `tokenize` do, as library calls (src/runs/model_commands.cpp),
// on a small character-level language model trained in the test: no data set to install.
#include "baton/runs/model_commands.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/io/file.h"
#include "baton/models/safetensors.h"
#include "baton/runs/train_recipe.h"
#include "baton/train/recipe.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;

// A recipe of a 1-layer gpt over a text it writes, trained for 6 batches into RUN/.
class TrainedModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("model_commands");
    std::ofstream text(dir_->file("text.txt"));
    for (int i = 0; i < 100; ++i) text << "the quick brown fox jumps over the lazy dog " << i << "\n";
    text.close();
    std::ofstream recipe(dir_->file("recipe.yaml"));
    recipe << "seed: 0\nmax_duration: 6ba\neval_interval: 0\neval_subset_num_batches: 2\nprogress_bar: false\n"
              "console_log_interval: 0ep\n"
              "data: {dataset: text, path: \""
           << dir_->file("text.txt")
           << "\", tokens: chars, context: 16, batch_size: 8, validation_fraction: 0.2}\n"
              "model: {name: gpt, layers: 1, width: 16, heads: 2}\n";
    recipe.close();
    TrainRequest request{.recipe = dir_->file("recipe.yaml"), .run_dir = dir_->file("run")};
    ASSERT_EQ(train_recipe(request), 0);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string recipe() { return dir_->file("recipe.yaml"); }
  static std::string weights() { return (dir_->path() / "run" / "model.pt").string(); }
  static TempDir* dir_;
};
TempDir* TrainedModel::dir_ = nullptr;

TEST_F(TrainedModel, EvaluationGivesTheEvaluationSetsMetrics) {
  const auto metrics = evaluate_recipe({.recipe = recipe(), .weights = weights()});
  ASSERT_EQ(metrics.count("eval"), 1U);
  ASSERT_EQ(metrics.at("eval").count("loss"), 1U);
  const double loss = metrics.at("eval").at("loss");
  EXPECT_TRUE(std::isfinite(loss) && loss > 0) << loss;
  EXPECT_THAT(error_of([&] { evaluate_recipe({.recipe = recipe(), .weights = dir_->file("none.pt")}); }),
              HasSubstr("none.pt"));
}

TEST_F(TrainedModel, PredictionsAreTheModelsOutputsWrittenAsNpyAndBounded) {
  const std::string out = dir_->file("p.npy");
  const Predictions p = predict_recipe({.recipe = recipe(), .weights = weights(), .out = out});
  ASSERT_EQ(p.outputs.dim(), 3);  // [N, T, vocabulary]
  EXPECT_EQ(p.outputs.size(1), 16);
  EXPECT_EQ(p.outputs.size(0), p.examples);  // the evaluation set's (within eval_subset_num_batches' batches)
  EXPECT_GT(p.examples, 0);
  EXPECT_FALSE(p.replaced);
  EXPECT_TRUE(std::filesystem::is_regular_file(out));
  EXPECT_TRUE(predict_recipe({.recipe = recipe(), .weights = weights(), .out = out}).replaced);
  // Outputs larger than the bound are refused before they are made, and nothing is written.
  const std::string big = dir_->file("big.npy");
  EXPECT_THROW(predict_recipe({.recipe = recipe(), .weights = weights(), .out = big, .max_output_bytes = 1024}),
               std::exception);
  EXPECT_FALSE(std::filesystem::exists(big));
  // The output is never one of the inputs.
  EXPECT_THAT(error_of([&] { predict_recipe({.recipe = recipe(), .weights = weights(), .out = weights()}); }),
              HasSubstr("--out"));
}

TEST_F(TrainedModel, ExportWritesTheWeightsThatWereTrained) {
  const std::string out = dir_->file("model.safetensors");
  const Exported exported =
      export_model({.checkpoint = weights(), .format = "safetensors", .out = out, .recipe = recipe()});
  EXPECT_GT(exported.tensors, 0U);
  EXPECT_EQ(read_safetensors(out).size(), exported.tensors);
  EXPECT_THAT(
      error_of([&] {
        export_model({.checkpoint = weights(), .format = "onnx", .out = dir_->file("m.onnx"), .recipe = recipe()});
      }),
      HasSubstr("--format onnx"));
  EXPECT_THAT(error_of([&] {
                export_model({.checkpoint = weights(), .format = "safetensors", .out = recipe(), .recipe = recipe()});
              }),
              HasSubstr("--out"));
}

TEST(TokenizeCorpus, TrainsATokenizerWritesShardsAndNeverWritesOverACorpus) {
  const TempDir dir("tokenize_corpus");
  {
    std::ofstream text(dir.file("a.txt"));
    for (int i = 0; i < 3000; ++i) text << "line " << i << " of a small corpus about foxes, dogs and numbers\n";
  }
  std::vector<std::string> said;
  TokenizeRequest request{.texts = {dir.file("a.txt")}, .out = dir.file("corpus"), .vocab_size = 300};
  request.progress = [&](const std::string& line) { said.push_back(line); };
  const TokenizedCorpus corpus = tokenize_corpus(request);
  EXPECT_EQ(corpus.vocab_size, 300);
  EXPECT_GT(corpus.summary.train_tokens, 0);
  EXPECT_GT(corpus.summary.val_tokens, 0);
  EXPECT_TRUE(std::filesystem::is_regular_file(corpus.tokenizer_path));
  ASSERT_EQ(said.size(), 1U);
  EXPECT_THAT(said[0], HasSubstr("tokenizer of 300 tokens on 1 text(s)"));
  EXPECT_THAT(error_of([&] { tokenize_corpus(request); }), HasSubstr("already holds"));
  // With the tokenizer it wrote, into a new folder: the same tokens.
  TokenizeRequest again{.texts = {dir.file("a.txt")}, .out = dir.file("again"), .tokenizer = corpus.tokenizer_path};
  EXPECT_EQ(tokenize_corpus(again).summary.train_tokens, corpus.summary.train_tokens);
  EXPECT_THAT(error_of([&] {
                tokenize_corpus({.texts = {dir.file("a.txt")},
                                 .out = dir.file("x"),
                                 .vocab_size = 300,
                                 .tokenizer = corpus.tokenizer_path});
              }),
              HasSubstr("not both"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("x")));
}

TEST(SetsWithDevice, ADeviceThisMachineLacksIsRefusedNamingTheFlag) {
  EXPECT_EQ(sets_with_device({"a=1"}, ""), (std::vector<std::string>{"a=1"}));
  EXPECT_EQ(sets_with_device({"a=1"}, "cpu"), (std::vector<std::string>{"a=1", "device=cpu"}));
  if (!torch::cuda::is_available()) {
    EXPECT_THAT(error_of([] { sets_with_device({}, "cuda:7"); }), HasSubstr("--device"));
  }
  EXPECT_THROW(sets_with_device({}, "tpu"), RecipeError);
}

}  // namespace
}  // namespace baton
