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

std::shared_ptr<TensorDataset> numbered(int64_t n) {
  auto x = torch::arange(n, torch::kFloat).unsqueeze(1);
  return std::make_shared<TensorDataset>(x, torch::arange(n) % 3);
}

std::vector<int64_t> ids(const Batch& b) {
  auto t = b.input.squeeze(1).to(torch::kLong);
  return {t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel()};
}

std::vector<std::vector<int64_t>> epoch(DataLoader& loader, int64_t e) {
  loader.start_epoch(e);
  std::vector<std::vector<int64_t>> out;
  while (auto b = loader.next()) out.push_back(ids(*b));
  return out;
}

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

TEST(TensorDataset, MovedToADeviceKeepsItsClassCount) {
  const auto moved = numbered(10)->to(c10::Device(c10::kCPU));
  EXPECT_EQ(moved->num_classes(), 3);
  EXPECT_EQ(moved->size(), 10);
  EXPECT_EQ(moved->device(), c10::Device(c10::kCPU));
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

TEST(SharedBatches, EachBatchIsMadeOnceAndEveryLoaderGetsTheBatchesItWouldAlone) {
  auto data = std::make_shared<CountedGathers>(numbered(100));
  const auto options = DataLoaderOptions().batch_size(8).seed(3).prefetch(false);
  DataLoader alone(numbered(100), options);
  std::vector<std::vector<int64_t>> expected = epoch(alone, 0), second = epoch(alone, 1);
  expected.insert(expected.end(), second.begin(), second.end());

  auto shared = std::make_shared<SharedBatches>(4 * 8 * (sizeof(float) + sizeof(int64_t)));  // 4 batches
  std::vector<std::unique_ptr<DataLoader>> loaders;
  for (int i = 0; i < 3; ++i)
    loaders.push_back(std::make_unique<DataLoader>(data, DataLoaderOptions(options).shared_batches(shared)));
  std::vector<std::vector<std::vector<int64_t>>> got(3);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      for (int64_t e = 0; e < 2; ++e) {
        for (auto& b : epoch(*loaders[i], e)) got[i].push_back(b);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i], expected) << "loader " << i;
  EXPECT_EQ(data->gathers.load(), 26);  // 13 batches an epoch, 2 epochs: once each, not 3 times
  const SharedBatches::Stats stats = shared->stats();
  EXPECT_EQ(stats.made, 26);
  EXPECT_EQ(stats.taken, 78);
  // 4 batches' bytes, and at most the 2 the other loaders were making then
  EXPECT_LE(stats.most_held_bytes, 6 * 8 * (sizeof(float) + sizeof(int64_t)));
  EXPECT_GE(stats.make_seconds, 0.0);
}

TEST(SharedBatches, AFastLoaderWaitsForTheSlowestAndGoesOnWhenItLeaves) {
  auto shared = std::make_shared<SharedBatches>(2 * 10 * (sizeof(float) + sizeof(int64_t)));  // 2 batches
  const auto options = DataLoaderOptions().batch_size(10).shuffle(false).shared_batches(shared);
  auto data = numbered(100);
  DataLoader fast(data, options), slow(data, options);
  ASSERT_EQ(ids(*fast.next()).front(), 0);
  ASSERT_EQ(ids(*fast.next()).front(), 10);
  std::atomic<bool> third{false};
  std::thread ahead([&] {
    EXPECT_EQ(ids(*fast.next()).front(), 20);  // 2 batches ahead of `slow`, which took none
    third = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(third.load());
  EXPECT_EQ(ids(*slow.next()).front(), 0);  // the held batch, not made again
  slow.leave_shared_batches();              // a trial that stopped: nobody waits for it
  ahead.join();
  EXPECT_TRUE(third.load());
  EXPECT_EQ(ids(*slow.next()).front(), 10);  // its own batches from now on
  EXPECT_EQ(shared->stats().waits, 1);
  EXPECT_EQ(shared->stats().made, 3);
}

// An evaluation set's stream: every loader evaluates at points of its own, each reads every batch
// at each evaluation, and each batch is gathered once for all of them while the bound allows; past
// it a loader gathers its batch alone (nobody waits).
TEST(SharedBatches, AnEvaluationStreamKeepsItsBatchesForEveryEvaluation) {
  auto data = std::make_shared<CountedGathers>(numbered(40));
  const auto options = DataLoaderOptions().batch_size(10).shuffle(false).prefetch(false);
  DataLoader alone(numbered(40), options);
  const std::vector<std::vector<int64_t>> expected = epoch(alone, 0);
  const int64_t batch_bytes = 10 * (sizeof(float) + sizeof(int64_t));
  for (const int64_t bound : {int64_t{1} << 20, 2 * batch_bytes}) {
    data->gathers = 0;
    auto shared = std::make_shared<SharedBatches>(bound, SharedBatches::Kind::kEvaluation);
    DataLoader a(data, DataLoaderOptions(options).shared_batches(shared));
    DataLoader b(data, DataLoaderOptions(options).shared_batches(shared));
    EXPECT_EQ(epoch(a, 0), expected);  // a evaluates, then b twice, then a again, then b half-way
    EXPECT_EQ(epoch(b, 0), expected);
    EXPECT_EQ(epoch(b, 0), expected);
    EXPECT_EQ(epoch(a, 0), expected);
    b.start_epoch(0);
    EXPECT_EQ(ids(*b.next()).front(), 0);
    const SharedBatches::Stats stats = shared->stats();
    EXPECT_EQ(stats.taken, 17);
    if (bound > 4 * batch_bytes) {
      EXPECT_EQ(data->gathers.load(), 4);  // each batch once
      EXPECT_EQ(stats.made_alone, 0);
    } else {
      EXPECT_EQ(data->gathers.load(), 2 + 4 * 2);  // the first 2 kept; the other 2 made at each evaluation
      EXPECT_EQ(stats.made, 2);
      EXPECT_EQ(stats.made_alone, 8);
    }
  }
}

TEST(SharedBatches, RefusesALoaderWhoseBatchesDiffer) {
  auto shared = std::make_shared<SharedBatches>();
  auto data = numbered(100);
  DataLoader first(data, DataLoaderOptions().batch_size(10).shared_batches(shared));
  EXPECT_THAT(error_of([&] { DataLoader(data, DataLoaderOptions().batch_size(20).shared_batches(shared)); }),
              ::testing::AllOf(::testing::HasSubstr("in batches of 20"), ::testing::HasSubstr("in batches of 10"),
                               ::testing::HasSubstr("share a data set, batch size and order")));
  EXPECT_THAT(error_of([&] { DataLoader(numbered(100), DataLoaderOptions().batch_size(10).shared_batches(shared)); }),
              ::testing::HasSubstr("cannot take the batches of"));
  EXPECT_THAT(error_of([&] { first.set_shard(0, 2); }), ::testing::HasSubstr("not sharded"));
  EXPECT_THAT(error_of([] { SharedBatches(0); }), ::testing::HasSubstr("max_held_bytes must be at least 1"));
}

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
