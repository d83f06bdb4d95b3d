// Tensor data sets (src/data/dataset.cpp): rows gathered as index_select gathers them, classes counted.
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
#include "data/dataloader_fixtures.h"

namespace baton {
namespace {

using namespace dataloader_fixtures;  // NOLINT(google-build-using-namespace)

using testing::CountedGathers;
using testing::error_of;

TEST(TensorDataset, GathersRowsAndCountsClasses) {
  auto data = numbered(10);
  EXPECT_EQ(data->size(), 10);
  EXPECT_EQ(data->num_classes(), 3);
  EXPECT_EQ(data->input_shape(), (std::vector<int64_t>{1}));
  Batch b = data->get_batch(torch::tensor({4, 1}, torch::kLong));
  EXPECT_EQ(ids(b), (std::vector<int64_t>{4, 1}));
  EXPECT_TRUE(torch::equal(b.target, torch::tensor({1, 1}, torch::kLong)));
  EXPECT_THROW(TensorDataset(torch::zeros({3, 2}), torch::zeros({4})), std::invalid_argument);
}

TEST(TensorDataset, GathersWhatIndexSelectGathersForEveryTypeAndShape) {
  torch::manual_seed(0);
  const at::Tensor indices = torch::tensor({5, 0, 5, 9, 2}, torch::kLong);
  for (const auto& x : {torch::randn({10, 3, 4, 2}), torch::randint(0, 255, {10, 7}).to(torch::kUInt8),
                        torch::randn({10}).to(torch::kDouble), torch::randn({10, 6}).to(torch::kBFloat16)}) {
    TensorDataset data(x, torch::arange(10));
    const Batch b = data.get_batch(indices);
    EXPECT_TRUE(torch::equal(b.input, x.index_select(0, indices))) << x.sizes() << " " << x.scalar_type();
    EXPECT_TRUE(torch::equal(b.target, indices));
  }
  // A non-contiguous source (a transposed view) takes LibTorch's own gather.
  const at::Tensor t = torch::randn({4, 10}).t();
  EXPECT_TRUE(torch::equal(TensorDataset(t, torch::arange(10)).get_batch(indices).input, t.index_select(0, indices)));
  EXPECT_THROW(numbered(10)->get_batch(torch::tensor({3, 10}, torch::kLong)), c10::Error);  // out of range
  EXPECT_THROW(numbered(10)->get_batch(torch::tensor({-1}, torch::kLong)), c10::Error);
}

TEST(TensorDataset, MovedToADeviceKeepsItsClassCount) {
  const auto moved = numbered(10)->to(c10::Device(c10::kCPU));
  EXPECT_EQ(moved->num_classes(), 3);
  EXPECT_EQ(moved->size(), 10);
  EXPECT_EQ(moved->device(), c10::Device(c10::kCPU));
}

}  // namespace
}  // namespace baton
