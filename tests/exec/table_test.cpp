// Benchmark tables: a CSV read and checked, trials answered from it (intermediate values at each
// step, the last step's values final), what a table lacks failing the trial with its reason, and
// a search run on one through the Experiment (--engine table:FILE).
#include "baton/exec/table.h"

#include <fstream>

#include <gtest/gtest.h>

#include "baton/exec/experiment.h"
#include "baton/exec/search.h"
#include "baton/exec/storage.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::TempDir;

const char* kTable = R"(# two ops and two widths; pool 32 is not there
op,width,step,eval/accuracy,params
conv,16,1,0.5,100
conv,16,2,0.7,100
conv,32.0,2,0.8,200
conv,32,1,0.6,200
"po,ol",16,1,0.3,10
"po,ol",16,2,0.4,10
)";

std::string write(const TempDir& dir, const std::string& text, const std::string& name = "table.csv") {
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

SearchSpace two_by_two() {
  return SearchSpace::from_json(nlohmann::json::parse(
      R"({"op": {"_type": "choice", "_value": ["conv", "po,ol"]}, "width": {"_type": "choice", "_value": [16, 32]}})"));
}

TEST(BenchmarkTable, ReadsColumnsConfigurationsAndItsSpace) {
  TempDir dir("table");
  const auto table = BenchmarkTable::read_csv(write(dir, kTable));
  EXPECT_EQ(table.parameters(), (std::vector<std::string>{"op", "width"}));
  EXPECT_EQ(table.metrics(), (std::vector<std::string>{"eval/accuracy", "params"}));
  EXPECT_EQ(table.configurations(), 3U);  // 32 and 32.0 are one
  EXPECT_EQ(table.space(), nlohmann::json::parse(R"({"op": {"_type": "choice", "_value": ["conv", "po,ol"]},
                                                     "width": {"_type": "choice", "_value": [16, 32]}})"));
  const auto finals = table.finals("eval/accuracy");
  ASSERT_EQ(finals.size(), 3U);
  EXPECT_EQ(finals[1].first, nlohmann::json({{"op", "conv"}, {"width", 32}}));
  EXPECT_DOUBLE_EQ(finals[1].second, 0.8);  // the last step's, whatever the rows' order
  EXPECT_DOUBLE_EQ(table.value({{"op", "po,ol"}, {"width", 16}}, "params"), 10);
  EXPECT_NO_THROW(table.check(two_by_two(), {"eval/accuracy", "params"}));
  EXPECT_EQ(testing::error_of([&] { table.check(two_by_two(), {"eval/acc"}); }),
            table.source() + ": the benchmark table has no metric 'eval/acc' (its metrics: eval/accuracy, params)");
  const auto wider = SearchSpace::from_json(nlohmann::json::parse(
      R"({"op": {"_type": "choice", "_value": ["conv"]}, "lr": {"_type": "uniform", "_value": [0, 1]}})"));
  EXPECT_EQ(testing::error_of([&] { table.check(wider, {"eval/accuracy"}); }),
            table.source() +
                ": the benchmark table has no column for the space's parameter 'lr' (its parameter "
                "columns: op, width)");
}

TEST(BenchmarkTable, AnswersTrialsAndFailsTheOnesItCannot) {
  TempDir dir("table");
  const auto table = BenchmarkTable::read_csv(write(dir, kTable));
  SequentialEngine engine(table.trial_function({"eval/accuracy"}));
  const int64_t conv = engine.submit({{"op", "conv"}, {"width", 32.0}});
  const int64_t missing = engine.submit({{"op", "po,ol"}, {"width", 32}});
  const int64_t open = engine.submit({{"op", "po,ol"}});  // width left open: one configuration has it
  const int64_t ambiguous = engine.submit({{"op", "conv"}});
  const int64_t stranger = engine.submit({{"op", "conv"}, {"width", 16}, {"lr", 0.1}});
  auto t = *engine.get(conv);
  EXPECT_EQ(t.status, TrialStatus::kTrained);
  ASSERT_EQ(t.metrics.intermediate.size(), 2U);
  EXPECT_EQ(t.metrics.intermediate[0].step, 1);
  EXPECT_DOUBLE_EQ(t.metrics.intermediate[0].value, 0.6);
  EXPECT_DOUBLE_EQ(*t.metrics.final, 0.8);
  EXPECT_DOUBLE_EQ(*engine.get(open)->metrics.final, 0.4);
  EXPECT_EQ(engine.get(missing)->status, TrialStatus::kFailed);
  EXPECT_NE(engine.get(missing)->error.find("the benchmark table has no configuration {\"op\":\"po,ol\",\"width\":32}"),
            std::string::npos)
      << engine.get(missing)->error;
  EXPECT_NE(engine.get(ambiguous)->error.find("has several configurations for {\"op\":\"conv\"}"), std::string::npos)
      << engine.get(ambiguous)->error;
  EXPECT_NE(engine.get(stranger)->error.find("has no column 'lr'"), std::string::npos) << engine.get(stranger)->error;
  // Several objectives and a constraint: the last step's values, in order.
  SequentialEngine several(table.trial_function({"eval/accuracy", "params"}, {"params"}));
  const auto s = *several.get(several.submit({{"op", "conv"}, {"width", 16}}));
  EXPECT_EQ(s.metrics.values, (std::vector<double>{0.7, 100}));
  EXPECT_EQ(s.metrics.constraints, (std::vector<double>{100}));
}

TEST(BenchmarkTable, RefusesAMalformedFileNamingTheLine) {
  TempDir dir("table");
  auto error = [&](const std::string& text) {
    const std::string path = write(dir, text);
    return testing::error_of([&] { BenchmarkTable::read_csv(path); }).substr(path.size());
  };
  EXPECT_EQ(error("op,eval/accuracy\nconv,0.5\n"),
            ":1: the header needs the parameter columns, then `step`, then the metrics");
  EXPECT_EQ(error("op,step\nconv,1\n"), ":1: the header needs the parameter columns, then `step`, then the metrics");
  EXPECT_EQ(error("op,step,acc\nconv,1\n"), ":2: 2 cells, but the header has 3");
  EXPECT_EQ(error("op,step,acc\nconv,1.5,0.1\n"), ":2: step '1.5' is not a whole number from 0 to 2^53");
  EXPECT_EQ(error("op,step,acc\nconv,1e19,0.1\n"), ":2: step '1e19' is not a whole number from 0 to 2^53");
  EXPECT_EQ(error("op,step,acc\nconv,-3,0.1\n"), ":2: step '-3' is not a whole number from 0 to 2^53");
  EXPECT_EQ(error("# made by hand\nop,step,acc\nconv,1,high\n"), ":3: acc 'high' is not a number");
  EXPECT_EQ(error("op,step,acc\nconv,1,0.1\nconv,1,0.2\n"), ":3: step 1 of this configuration is there twice");
  EXPECT_EQ(error("op,step,acc\n"), ": the benchmark table has no rows");
  EXPECT_NE(testing::error_of([&] { BenchmarkTable::read_csv(dir.path().string()); }).find("not a regular file"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] { BenchmarkTable::read_csv((dir / "none.csv").string()); }).find("none.csv"),
            std::string::npos);
}

TEST(BenchmarkTable, ASearchOnATableStoresItsTrialsAndGoesOnPastAMissingOne) {
  TempDir dir("table");
  std::ofstream(dir / "space.yaml") << "op: {_type: choice, _value: [conv, 'po,ol']}\n"
                                       "width: {_type: choice, _value: [16, 32]}\n";
  const auto options = ExperimentOptions()
                           .space((dir / "space.yaml").string())
                           .engine("table:" + write(dir, kTable))
                           .strategy("grid")
                           .trials(4)
                           .run_dir(dir / "run")
                           .out(nullptr);
  Experiment experiment(options);
  const ExperimentResult result = experiment.run();
  ASSERT_TRUE(result.best.has_value());
  EXPECT_EQ(result.best->parameters, nlohmann::json({{"op", "conv"}, {"width", 32}}));
  EXPECT_DOUBLE_EQ(*result.best->metrics.final, 0.8);
  const auto stored = open_storage("sqlite://" + (dir / "run/search.db").string())->load_trials();
  ASSERT_EQ(stored.size(), 4U);
  int failed = 0;
  for (const auto& t : stored) failed += t.status == TrialStatus::kFailed ? 1 : 0;
  EXPECT_EQ(failed, 1);  // po,ol at 32: not in the table
  // Refused before anything is written: a command beside the table, a metric or column it lacks.
  auto refusal = [&](ExperimentOptions o) {
    return testing::error_of([&] { Experiment e(o.run_dir(dir / "refused")); });
  };
  EXPECT_EQ(refusal(ExperimentOptions(options).command("true")),
            "--engine table:" + (dir / "table.csv").string() +
                " answers the trials from the table: leave out --command and --recipe");
  EXPECT_NE(refusal(ExperimentOptions(options).metric("eval/loss")).find("has no metric 'eval/loss'"),
            std::string::npos);
  EXPECT_EQ(refusal(ExperimentOptions(options).engine("tables:x.csv")),
            "--engine tables:x.csv: expected process (trials run) or table:FILE (trials answered from a benchmark "
            "table)");
  EXPECT_FALSE(std::filesystem::exists(dir / "refused"));
}

}  // namespace
}  // namespace baton
