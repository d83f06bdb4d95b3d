// Fashion-MNIST (src/data/fashion_mnist.cpp): its files read, or a skip saying how to get them.
#include "baton/data/dataloader.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/data/dataset.h"
#include "baton/data/fashion_mnist.h"
#include "baton/data/shared_batches.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::CountedGathers;
using testing::error_of;

TEST(FashionMnist, LoadsStandardisedFromTheDebianPackage) {
  if (!std::filesystem::exists(kFashionMnistDir)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto [train, test] = load_fashion_mnist();
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(train->input_shape(), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(train->num_classes(), 10);
  EXPECT_NEAR(train->inputs().mean().item<double>(), 0.0, 1e-4);
  EXPECT_NEAR(train->inputs().std().item<double>(), 1.0, 1e-4);
}

TEST(FashionMnist, AMissingDirectoryNamesTheFileAndThePackage) {
  try {
    load_fashion_mnist("/nonexistent");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr(
                    "/nonexistent/train-images-idx3-ubyte.gz: not found; install Debian's dataset-fashion-mnist"));
  }
}

}  // namespace
}  // namespace baton
