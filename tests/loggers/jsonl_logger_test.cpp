// metrics.jsonl (src/loggers/jsonl_logger.cpp): a line per entry, resumes that keep what was written.
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/core/algorithm.h"
#include "baton/core/engine.h"
#include "baton/core/state.h"
#include "baton/loggers/in_memory_logger.h"
#include "baton/loggers/jsonl_logger.h"
#include "common/test_util.h"
#include "loggers/helpers.h"

namespace baton {
namespace {

using testing::loss_steps;
using testing::move_to_batch;
using testing::TempDir;

TEST(JsonlLogger, AResumedRunKeepsTheLinesUpToItsBatchAndAppendsAfterThem) {
  const TempDir dir("loggers");
  const auto path = dir.path() / "metrics.jsonl";
  State state;
  Logger logger(state);
  {
    JsonlLogger first(path.string());
    first.log_hyperparameters({{"lr", 0.1}});
    for (int64_t step = 1; step <= 10; ++step) first.log_metrics({{"train/loss", 1.0 / step}}, step);
    first.close(state, logger);
  }
  std::ofstream(path, std::ios::app) << R"({"step": 11, "train/lo)";  // a kill mid-line
  // Resumed from the checkpoint of batch 6: batches 7-10 are trained again, and logged once.
  JsonlLogger resumed(path.string(), /*resume=*/true);
  resumed.log_hyperparameters({{"lr", 0.1}});
  move_to_batch(state, 6);
  resumed.after_load(state, logger);
  for (int64_t step = 7; step <= 9; ++step) resumed.log_metrics({{"train/loss", 0.5}}, step);
  resumed.close(state, logger);
  EXPECT_EQ(loss_steps(path), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  const std::string text = testing::read_file(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 11);  // and both hyperparameters lines
  // A run that starts afresh (nothing resumed) starts the file afresh.
  JsonlLogger fresh(path.string(), /*resume=*/true);
  State start;
  fresh.after_load(start, logger);
  fresh.log_metrics({{"train/loss", 2.0}}, 1);
  fresh.close(start, logger);
  EXPECT_EQ(loss_steps(path), (std::vector<int64_t>{1}));
}

// Composer hands algorithm traces to its loggers; baton's file and in-memory loggers record them.
TEST(JsonlLogger, WritesHowOftenEachAlgorithmRanAtEachEpochEnd) {
  struct OnBeforeLoss : Algorithm {
    std::string name() const override { return "Halve"; }
    bool match(Event e, const State&) override { return e == Event::kBeforeLoss; }
    std::optional<int> apply(Event, State&, Logger&) override { return std::nullopt; }
  };
  const TempDir dir("loggers");
  const auto path = dir.path() / "traces.jsonl";
  State state;
  state.algorithms.push_back(std::make_shared<OnBeforeLoss>());
  auto jsonl = std::make_shared<JsonlLogger>(path.string());
  auto memory = std::make_shared<InMemoryLogger>();
  Logger logger(state, {jsonl, memory});
  Engine engine(state, logger);
  for (int i = 0; i < 3; ++i) engine.run_event(Event::kBeforeLoss);
  engine.run_event(Event::kAfterLoss);  // nothing runs there
  move_to_batch(state, 3);
  jsonl->epoch_end(state, logger);
  jsonl->epoch_end(state, logger);  // nothing ran since: no second line
  engine.run_event(Event::kBeforeLoss);
  move_to_batch(state, 1);  // batch 4
  jsonl->close(state, logger);
  EXPECT_EQ(memory->trace_runs(), (std::map<std::string, int64_t>{{"Halve/before_loss", 4}}));
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["step"], 3);
  EXPECT_EQ(lines[0]["traces"], (nlohmann::json{{"Halve/before_loss", 3}}));
  EXPECT_EQ(lines[1]["step"], 4);
  EXPECT_EQ(lines[1]["traces"], (nlohmann::json{{"Halve/before_loss", 1}}));
}

}  // namespace
}  // namespace baton
