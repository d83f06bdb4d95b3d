// The run loggers by name (src/loggers/registry.cpp): each writes its file; options checked with the recipe.
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/core/engine.h"
#include "baton/core/state.h"
#include "baton/loggers/registry.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::TempDir;

TEST(RunLoggers, EachNameWritesItsFileInTheRunFolderAndAnUnknownNameSaysTheKnownOnes) {
  EXPECT_EQ(run_logger_names(), (std::vector<std::string>{"csv", "jsonl", "mlflow", "tensorboard"}));
  const TempDir dir("loggers");
  State state;
  Logger logger(state);
  for (const std::string name : {"csv", "jsonl", "tensorboard"}) {
    auto destination = make_run_logger(name, RunLoggerContext{.folder = dir.path().string()});
    destination->log_metrics({{"train/loss", 1.5}}, 1);
    destination->close(state, logger);
  }
  EXPECT_THAT(testing::read_file(dir.path() / "metrics.jsonl"), ::testing::HasSubstr("train/loss"));
  EXPECT_THAT(testing::read_file(dir.path() / "metrics.csv"), ::testing::HasSubstr("train/loss"));
  EXPECT_FALSE(std::filesystem::is_empty(dir.path() / "tensorboard"));
  EXPECT_THAT([&] { make_run_logger("xml", RunLoggerContext{.folder = dir.path().string()}); },
              ::testing::ThrowsMessage<std::invalid_argument>(
                  ::testing::StrEq("unknown logger 'xml' (known: csv, jsonl, mlflow, tensorboard)")));
}

TEST(RunLoggers, OptionsAreCheckedWhenTheRecipeIsReadAndAFileLoggerTakesNone) {
  const auto check = [](const std::string& name, const nlohmann::json& options) {
    OptionReader reader("loggers." + name, options);
    check_run_logger(name, reader);
  };
  EXPECT_NO_THROW(check("mlflow", {{"tracking_uri", "http://127.0.0.1:5000"}, {"experiment", "fashion"}}));
  EXPECT_THAT(
      [&] {
        check("mlflow", {{"experiment", "fashion"}});
      },
      ::testing::ThrowsMessage<OptionError>(::testing::HasSubstr("tracking_uri is required")));
  EXPECT_THAT(
      [&] {
        check("mlflow", {{"tracking_uri", "127.0.0.1:5000"}});
      },
      ::testing::ThrowsMessage<OptionError>(::testing::HasSubstr("http:// or https://")));
  EXPECT_THAT(
      [&] {
        check("mlflow", {{"tracking_uri", "http://h"}, {"experimnt", "x"}});
      },
      ::testing::ThrowsMessage<OptionError>(::testing::HasSubstr("experimnt")));
  EXPECT_THAT(
      [&] {
        check("jsonl", {{"path", "x"}});
      },
      ::testing::ThrowsMessage<OptionError>(::testing::HasSubstr("unknown option")));
}

}  // namespace
}  // namespace baton
