// What fused trials share (src/train/fused.cpp): a data section's sets loaded once for every trial
// that asks, the others waiting; a load that throws keeps nothing.
#include "baton/train/fused.h"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/data/dataset.h"

namespace baton {
namespace {

FusedData::Sets some_sets() {
  FusedData::Sets sets;
  sets.train = std::make_shared<TensorDataset>(torch::randn({8, 2}), torch::zeros({8}, torch::kLong));
  return sets;
}

TEST(FusedData, EachSectionIsLoadedOnceForEveryTrialThatAsks) {
  FusedData fused;
  std::atomic<int> loads{0};
  std::vector<std::shared_ptr<Dataset>> seen(6);
  std::vector<std::thread> trials;
  for (std::size_t t = 0; t < seen.size(); ++t) {
    trials.emplace_back([&, t] {
      const std::string key = t % 2 ? "data: a" : "data: b";
      seen[t] = fused
                    .sets(key,
                          [&] {
                            ++loads;
                            std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the others wait
                            return some_sets();
                          })
                    .train;
    });
  }
  for (auto& trial : trials) trial.join();
  EXPECT_EQ(loads.load(), 2);  // one per section
  for (std::size_t t = 2; t < seen.size(); ++t) EXPECT_EQ(seen[t], seen[t % 2]) << t;
  EXPECT_NE(seen[0], seen[1]);
}

TEST(FusedData, ALoadThatThrowsKeepsNothingAndTheNextTrialLoadsAgain) {
  FusedData fused;
  int loads = 0;
  const auto failing = [&]() -> FusedData::Sets {
    ++loads;
    throw std::invalid_argument("data.path: no such file");
  };
  EXPECT_THROW(fused.sets("data: x", failing), std::invalid_argument);
  EXPECT_THROW(fused.sets("data: x", failing), std::invalid_argument);
  EXPECT_EQ(loads, 2);
  const auto sets = fused.sets("data: x", [&] {
    ++loads;
    return some_sets();
  });
  EXPECT_NE(sets.train, nullptr);
  EXPECT_EQ(loads, 3);
  EXPECT_EQ(fused.stats().made, 0);  // no batches were asked for
}

}  // namespace
}  // namespace baton
