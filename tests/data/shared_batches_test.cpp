// Batches shared by fused trials (src/data/shared_batches.cpp).
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

}  // namespace
}  // namespace baton
