// The data set kinds by name (src/train/registry.cpp): an unknown kind lists the known ones, and a key
// of another kind, or of no kind, is refused at its line before any file is read.
#include "baton/train/recipe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string build_error(const std::string& yaml) {
  return error_of([&] { build_run(Recipe::parse(yaml, "r.yaml")); });
}

TEST(DataSetRegistry, AnUnknownKindListsTheKnownOnes) {
  EXPECT_THAT(build_error("model: {name: mlp}\ndata: {dataset: imagez}\n"),
              ::testing::AllOf(StartsWith("r.yaml:2:"), HasSubstr("data.dataset: unknown dataset 'imagez' (known: "),
                               HasSubstr("fashion_mnist, files, text, images, webdataset, tokens"),
                               HasSubstr("did you mean 'images'?")));
}

TEST(DataSetRegistry, AKeyOfAnotherKindIsRefusedBeforeAnyFileIsRead) {
  // The files named do not exist: the key is refused first.
  EXPECT_THAT(build_error("model: {name: mlp}\ndata: {dataset: text, path: /nonexistent.txt, train_shards: x}\n"),
              ::testing::AllOf(StartsWith("r.yaml:2:"), HasSubstr("train_shards")));
  EXPECT_THAT(build_error("model: {name: mlp}\ndata: {dataset: tokens, train_files: /nonexistent_*.bin, "
                          "image_size: 32}\n"),
              HasSubstr("image_size"));
  // The loader's keys belong to every kind.
  EXPECT_THAT(build_error("model: {name: mlp}\ndata: {dataset: text, path: /nonexistent.txt, batch_size: 4}\n"),
              HasSubstr("/nonexistent.txt"));
}

}  // namespace
}  // namespace baton
