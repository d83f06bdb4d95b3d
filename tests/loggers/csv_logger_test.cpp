// metrics.csv (src/loggers/csv_logger.cpp): a row per step, columns as metrics appear, resumes.
#include <filesystem>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/core/engine.h"
#include "baton/core/state.h"
#include "baton/loggers/csv_logger.h"
#include "common/test_util.h"
#include "loggers/helpers.h"

namespace baton {
namespace {

using testing::move_to_batch;
using testing::TempDir;

TEST(CsvLogger, OneRowPerStepColumnsGrowAsMetricsAppear) {
  const TempDir dir("loggers");
  const auto path = dir.path() / "metrics.csv";
  CsvLogger csv(path.string());
  State state;
  Logger logger(state);
  csv.log_metrics({{"train/loss", 2.5}}, 1);
  csv.log_metrics({{"train/loss", 2.0}}, 2);
  csv.log_metrics({{"eval/accuracy", 0.5}}, 2);  // same step: same row
  csv.log_metrics({{"train/loss", 1.5}}, 3);
  csv.close(state, logger);
  std::istringstream lines(testing::read_file(path));
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::stringstream cell_stream(line);
    for (std::string cell; std::getline(cell_stream, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), 4U);
  EXPECT_THAT(rows[0], ::testing::ElementsAre("step", "time", "train/loss", "eval/accuracy"));
  EXPECT_EQ(rows[1][0], "1");
  EXPECT_EQ(rows[1][2], "2.5");
  EXPECT_EQ(rows[1][3], "");
  EXPECT_EQ(rows[2][2], "2");
  EXPECT_EQ(rows[2][3], "0.5");
  EXPECT_EQ(rows[3][0], "3");
  EXPECT_EQ(rows[3][2], "1.5");
}

TEST(CsvLogger, AResumedRunKeepsTheRowsUpToItsBatch) {
  const TempDir dir("loggers");
  const auto path = dir.path() / "metrics.csv";
  State state;
  Logger logger(state);
  {
    CsvLogger first(path.string());
    for (int64_t step = 1; step <= 5; ++step) first.log_metrics({{"train/loss", 1.0 / step}}, step);
    first.log_metrics({{"eval/accuracy", 0.75}}, 5);
    first.close(state, logger);
  }
  std::ofstream(path, std::ios::app) << "6,17000";  // a kill mid-row
  CsvLogger resumed(path.string(), /*resume=*/true);
  move_to_batch(state, 3);
  resumed.after_load(state, logger);
  resumed.log_metrics({{"train/loss", 0.2}}, 4);
  resumed.log_metrics({{"eval/accuracy", 0.8}}, 4);
  resumed.close(state, logger);
  std::istringstream lines(testing::read_file(path));
  std::vector<std::string> steps;
  for (std::string line; std::getline(lines, line);) steps.push_back(line.substr(0, line.find(',')));
  EXPECT_EQ(steps, (std::vector<std::string>{"step", "1", "2", "3", "4"}));
  EXPECT_THAT(testing::read_file(path), ::testing::HasSubstr("step,time,train/loss,eval/accuracy\n"));
  EXPECT_THAT(testing::read_file(path), ::testing::HasSubstr(",0.2,0.8\n"));
}

}  // namespace
}  // namespace baton
