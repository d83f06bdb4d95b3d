// The in-memory logger (src/loggers/in_memory_logger.cpp): every value with its step in logging
// order, the latest of each, hyperparameters merged, how often each algorithm ran.
#include "baton/loggers/in_memory_logger.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "baton/core/trace.h"

namespace baton {
namespace {

using Points = std::vector<std::pair<int64_t, double>>;

TEST(InMemoryLogger, KeepsEveryValueWithItsStepAndTheLatestOfEach) {
  InMemoryLogger memory;
  memory.log_metrics({{"train/loss", 2.0}, {"eval/accuracy", 0.5}}, 1);
  memory.log_metrics({{"train/loss", 1.5}}, 2);
  memory.log_metrics({{"train/loss", 1.75}}, 2);  // a second value at a step is kept too
  EXPECT_EQ(memory.series("train/loss"), (Points{{1, 2.0}, {2, 1.5}, {2, 1.75}}));
  EXPECT_EQ(memory.series("eval/accuracy"), (Points{{1, 0.5}}));
  EXPECT_TRUE(memory.series("never").empty());
  EXPECT_EQ(memory.latest("train/loss"), 1.75);
  EXPECT_EQ(memory.latest("never"), std::nullopt);
  EXPECT_EQ(memory.latest(), (Metrics{{"train/loss", 1.75}, {"eval/accuracy", 0.5}}));
}

TEST(InMemoryLogger, MergesHyperparametersAndCountsTheAlgorithmsThatRan) {
  InMemoryLogger memory;
  memory.log_hyperparameters({{"lr", 0.1}, {"batch", 32}});
  memory.log_hyperparameters({{"lr", 0.05}});
  EXPECT_EQ(memory.hyperparameters(), nlohmann::json::parse(R"({"lr": 0.05, "batch": 32})"));
  Trace ran;
  ran.run = true;
  const Trace skipped;
  memory.log_traces({{"LabelSmoothing/before_loss", ran}, {"MixUp/before_forward", skipped}});
  memory.log_traces({{"LabelSmoothing/before_loss", ran}});
  EXPECT_EQ(memory.trace_runs(), (std::map<std::string, int64_t>{{"LabelSmoothing/before_loss", 2}}));
}

TEST(InMemoryLogger, ThreadsLoggingAtOnceLoseNothing) {
  InMemoryLogger memory;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&memory, t] {
      for (int64_t s = 0; s < 500; ++s) memory.log_metrics({{"m" + std::to_string(t), 1.0}, {"shared", 2.0}}, s);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(memory.series("shared").size(), 2000U);
  EXPECT_EQ(memory.series("m3").size(), 500U);
}

}  // namespace
}  // namespace baton
