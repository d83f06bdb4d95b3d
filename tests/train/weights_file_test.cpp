// Model weights from a file (src/train/weights_file.cpp): a safetensors file starts the model.
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

// model.weights: the network starts from a safetensors file's weights; a file that is not one, or
// another model's, is refused at the key.
TEST(Recipe, ModelWeightsStartFromASafetensorsFile) {
  const baton::testing::TempDir dir("recipe_weights");
  write_npy((dir.path() / "x.npy").string(), torch::randn({8, 1, 8, 8}));
  write_npy((dir.path() / "y.npy").string(), torch::arange(8) % 2);
  torch::manual_seed(3);
  auto source = make_model("fashion_cnn", ModelOptions().input_shape({1, 8, 8}).num_classes(2));
  const std::string weights = (dir.path() / "w.safetensors").string();
  write_safetensors(weights, model_tensors(*source));
  const std::string data = "data: {dataset: files, train_inputs: " + (dir.path() / "x.npy").string() +
                           ", train_labels: " + (dir.path() / "y.npy").string() + "}\n";
  TrainingRun run = build_run(Recipe::parse(data + "model: {name: fashion_cnn, weights: " + weights + "}\n", "r.yaml"));
  const NamedTensors got = model_tensors(*run.options.model());
  const NamedTensors want = model_tensors(*source);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].second.equal(want[i].second)) << got[i].first;
  const auto build = [&](const std::string& yaml) {
    return error_of([&] { build_run(Recipe::parse(yaml, "r.yaml")); });
  };
  EXPECT_THAT(build(data + "model: {name: fashion_cnn, weights: " + (dir.path() / "x.npy").string() + "}\n"),
              HasSubstr("model.weights: " + (dir.path() / "x.npy").string() + ": not a safetensors file"));
  EXPECT_THAT(build(data + "model: {name: mlp, weights: " + weights + "}\n"), HasSubstr("model.weights: " + weights));
}

}  // namespace
}  // namespace baton
