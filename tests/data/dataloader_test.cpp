// The data loader (src/data/dataloader.cpp): batches, shuffling from seed and epoch, workers, resuming
// mid-epoch.
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

// Rows on the CPU that say whether their gather is cheap, and the threads that gathered them.
class ThreadRecordingDataset : public Dataset {
 public:
  explicit ThreadRecordingDataset(bool cheap) : cheap_(cheap) {}
  int64_t size() const override { return 40; }
  Batch get_batch(const at::Tensor& indices) const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      threads_.insert(std::this_thread::get_id());
    }
    return {indices.to(torch::kFloat).unsqueeze(1), indices};
  }
  std::vector<int64_t> input_shape() const override { return {1}; }
  bool gather_is_cheap() const override { return cheap_; }
  bool gathered_off_this_thread() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return threads_.size() > 1 || (threads_.size() == 1 && *threads_.begin() != std::this_thread::get_id());
  }

 private:
  bool cheap_;
  mutable std::mutex mutex_;
  mutable std::set<std::thread::id> threads_;
};

TEST(DataLoader, PrefetchesOnAThreadOnlyWhereThatPays) {
  auto run = [](bool cheap, std::optional<c10::Device> to, bool prefetch) {
    auto data = std::make_shared<ThreadRecordingDataset>(cheap);
    DataLoader loader(data, DataLoaderOptions().batch_size(4).seed(1).prefetch(prefetch));
    if (to) loader.set_device(*to);
    loader.start_epoch(0);
    std::vector<int64_t> sizes;
    while (auto b = loader.next()) sizes.push_back(b->size());
    EXPECT_EQ(sizes, std::vector<int64_t>(10, 4));
    return data->gathered_off_this_thread();
  };
  EXPECT_TRUE(run(/*cheap=*/false, std::nullopt, true));            // a gather that is work: ahead, on the thread
  EXPECT_FALSE(run(/*cheap=*/true, std::nullopt, true));            // rows in memory for the CPU: in line
  EXPECT_TRUE(run(/*cheap=*/true, c10::Device(c10::kMeta), true));  // bound for another device: ahead
  EXPECT_FALSE(run(/*cheap=*/false, std::nullopt, false));          // prefetch off
}

TEST(DataLoader, EachEpochVisitsEveryExampleOnceInANewOrder) {
  DataLoader loader(numbered(103), DataLoaderOptions().batch_size(10).seed(5));
  EXPECT_EQ(loader.num_batches(), 11);
  auto e0 = epoch(loader, 0);
  auto e1 = epoch(loader, 1);
  ASSERT_EQ(e0.size(), 11u);
  EXPECT_EQ(e0.back().size(), 3u);
  std::multiset<int64_t> seen;
  for (auto& b : e0) seen.insert(b.begin(), b.end());
  EXPECT_EQ(seen.size(), 103u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 103u);
  EXPECT_NE(e0, e1);
}

TEST(DataLoader, TheOrderDependsOnlyOnSeedAndEpoch) {
  DataLoader a(numbered(50), DataLoaderOptions().batch_size(8).seed(9));
  DataLoader b(numbered(50), DataLoaderOptions().batch_size(8).seed(9).prefetch(false));
  DataLoader c(numbered(50), DataLoaderOptions().batch_size(8).seed(10));
  epoch(a, 0);
  EXPECT_EQ(epoch(a, 3), epoch(b, 3));
  EXPECT_NE(epoch(a, 3), epoch(c, 3));
}

TEST(DataLoader, MaxBatchesEndsTheEpochEarlyInTheFullOrder) {
  DataLoader all(numbered(103), DataLoaderOptions().batch_size(10).seed(5));
  DataLoader few(numbered(103), DataLoaderOptions().batch_size(10).seed(5).max_batches(3));
  EXPECT_EQ(few.num_batches(), 3);
  for (int64_t e : {0, 1}) {
    auto full = epoch(all, e);
    full.resize(3);
    EXPECT_EQ(epoch(few, e), full);  // the first three batches of the whole epoch's order
  }
  EXPECT_EQ(DataLoader(numbered(25), DataLoaderOptions().batch_size(10).max_batches(7)).num_batches(), 3);
  EXPECT_THROW(few.set_position({0, 4, 5}), std::invalid_argument);
  EXPECT_THROW(DataLoader(numbered(5), DataLoaderOptions().max_batches(-2)), std::invalid_argument);
}

TEST(DataLoader, DropLastAndNoShuffle) {
  DataLoader loader(numbered(25), DataLoaderOptions().batch_size(10).drop_last(true).shuffle(false));
  auto e = epoch(loader, 0);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1], (std::vector<int64_t>{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}));
}

TEST(DataLoader, RestoredPositionContinuesExactly) {
  DataLoader original(numbered(100), DataLoaderOptions().batch_size(7).seed(3));
  original.start_epoch(2);
  for (int i = 0; i < 5; ++i) original.next();
  const DataLoaderPosition saved = original.position();
  EXPECT_EQ(saved, (DataLoaderPosition{2, 5, 3}));
  std::vector<std::vector<int64_t>> rest;
  while (auto b = original.next()) rest.push_back(ids(*b));

  DataLoader restored(numbered(100), DataLoaderOptions().batch_size(7).seed(99));
  restored.set_position(DataLoaderPosition::from_json(saved.to_json()));
  std::vector<std::vector<int64_t>> resumed;
  while (auto b = restored.next()) resumed.push_back(ids(*b));
  EXPECT_EQ(resumed, rest);
  EXPECT_THROW(restored.set_position({0, 99, 3}), std::invalid_argument);
  EXPECT_THROW(DataLoaderPosition::from_json({{"epoch", 1}}), std::invalid_argument);
}

// A data set on the meta device, a stand-in for a GPU (shapes, no values: any read throws). It checks
// that the indices it is asked for are there too.
class MetaDataset : public Dataset {
 public:
  int64_t size() const override { return 10; }
  Batch get_batch(const at::Tensor& indices) const override {
    EXPECT_TRUE(indices.is_meta());
    const auto meta = torch::TensorOptions().device(c10::kMeta);
    return {torch::empty({indices.size(0), 1}, meta), torch::empty({indices.size(0)}, meta.dtype(torch::kLong))};
  }
  std::vector<int64_t> input_shape() const override { return {1}; }
  c10::Device device() const override { return c10::Device(c10::kMeta); }
};

TEST(DataLoader, ADataSetOnADeviceIsGatheredThere) {
  DataLoader loader(std::make_shared<MetaDataset>(), DataLoaderOptions().batch_size(4).seed(7));  // no thread needed
  EXPECT_EQ(loader.device(), c10::Device(c10::kMeta));
  std::vector<int64_t> sizes;
  while (auto b = loader.next()) {
    EXPECT_TRUE(b->input.is_meta());
    sizes.push_back(b->size());
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
}

TEST(DataLoader, BatchesGoToTheDeviceItIsGiven) {
  DataLoader loader(numbered(6), DataLoaderOptions().batch_size(4).shuffle(false));
  EXPECT_EQ(loader.device(), c10::Device(c10::kCPU));
  loader.set_device(c10::Device(c10::kMeta));
  loader.start_epoch(0);
  auto b = loader.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->input.is_meta());
  loader.set_device(c10::Device(c10::kCPU));
  loader.start_epoch(0);
  EXPECT_EQ(ids(*loader.next()), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(DataLoader, RefusesBadOptions) {
  EXPECT_THROW(DataLoader(nullptr), std::invalid_argument);
  EXPECT_THROW(DataLoader(numbered(3), DataLoaderOptions().batch_size(0)), std::invalid_argument);
}

}  // namespace
}  // namespace baton
