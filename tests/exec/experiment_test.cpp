// Experiment: what `baton search` runs, from C++: trials of a command, a storage that a resume
// continues, stop() as a signal would, and bad options refused before anything runs.
#include "baton/exec/experiment.h"

#include <csignal>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "baton/exec/storage.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::TempDir;

// A space of one number, and a trial that reports 1 - (x - 0.3)^2 after sleeping `sleep_s`.
ExperimentOptions quadratic(const TempDir& dir, double sleep_s) {
  std::ofstream(dir / "space.yaml") << "x: {_type: uniform, _value: [0, 1]}\n";
  const std::string trial =
      "sleep " + std::to_string(sleep_s) +
      "; python3 -c 'import json, os; x = json.loads(os.environ[\"BATON_TRIAL_PARAMETERS\"])[\"x\"]; "
      "print(\"baton: \" + json.dumps({\"final\": 1 - (x - 0.3) ** 2}))'";
  return ExperimentOptions()
      .space((dir / "space.yaml").string())
      .command(trial)
      .strategy("random")
      .run_dir(dir / "run")
      .out(nullptr);
}

TEST(Experiment, RunsTheTrialsStoresThemAndWritesTheSummary) {
  TempDir dir("experiment");
  Experiment experiment(quadratic(dir, 0).trials(5).parallel(2));
  const ExperimentResult result = experiment.run();
  ASSERT_TRUE(result.best.has_value());
  EXPECT_EQ(result.stopped_by, 0);
  const auto summary = nlohmann::json::parse(testing::read_file(result.summary));
  EXPECT_EQ(summary["trials"]["total"], 5);
  EXPECT_EQ(summary["best"]["value"].get<double>(), *result.best->metrics.final);
  const double x = result.best->parameters["x"].get<double>();
  EXPECT_DOUBLE_EQ(*result.best->metrics.final, 1 - (x - 0.3) * (x - 0.3));
  const auto stored = open_storage("sqlite://" + (dir / "run/search.db").string())->load_trials();
  ASSERT_EQ(stored.size(), 5u);
  for (const auto& t : stored) EXPECT_EQ(t.status, TrialStatus::kTrained);
}

TEST(Experiment, MiddlewaresByNameJoinTheStack) {
  TempDir dir("experiment");
  Experiment experiment(quadratic(dir, 0).trials(6).maximize(false).middlewares({{"budget", {{"max_trials", 2}}}}));
  const ExperimentResult result = experiment.run();
  const auto summary = nlohmann::json::parse(testing::read_file(result.summary));
  EXPECT_EQ(summary["trials"]["total"], 2);  // the budget's, not --trials'
  EXPECT_EQ(summary["direction"], "minimize");
}

TEST(Experiment, StopEndsTheRunningTrialsAndAResumeRunsThemAgain) {
  TempDir dir("experiment");
  {
    Experiment experiment(quadratic(dir, 30).trials(3).parallel(2));
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      experiment.stop(SIGTERM);
    });
    const ExperimentResult result = experiment.run();
    stopper.join();
    EXPECT_EQ(result.stopped_by, SIGTERM);
    EXPECT_GE(result.interrupted, 2);  // both running trials, and any it had not started
    EXPECT_FALSE(result.best.has_value());
  }
  EXPECT_NE(testing::error_of([&] { Experiment again(quadratic(dir, 0).trials(3)); }).find("add --resume"),
            std::string::npos);
  Experiment resumed(quadratic(dir, 0).trials(3).resume(true));
  const ExperimentResult result = resumed.run();
  ASSERT_TRUE(result.best.has_value());
  const auto stored = open_storage("sqlite://" + (dir / "run/search.db").string())->load_trials();
  ASSERT_EQ(stored.size(), 3u);  // the interrupted trials ran again, none was added
  for (const auto& t : stored) EXPECT_EQ(t.status, TrialStatus::kTrained) << t.id << ": " << t.error;
}

TEST(Experiment, SeveralObjectivesGiveAParetoFrontInTheResultTheSummaryAndTheStorage) {
  TempDir dir("experiment");
  std::ofstream(dir / "space.yaml") << "x: {_type: uniform, _value: [0, 1]}\n";
  // Maximise x and 1 - x (every trial is on the front) with x <= 0.7.
  const std::string trial =
      "python3 -c 'import json, os; x = json.loads(os.environ[\"BATON_TRIAL_PARAMETERS\"])[\"x\"]; "
      "print(\"baton: \" + json.dumps({\"final\": [x, 1 - x], \"constraints\": [x]}))'";
  Experiment experiment(ExperimentOptions()
                            .space((dir / "space.yaml").string())
                            .command(trial)
                            .strategy("nsga2")
                            .strategy_options({"population=4"})
                            .objectives({"a:max", "b:max"})
                            .constraints({"x<=0.7"})
                            .trials(12)
                            .parallel(2)
                            .run_dir(dir / "run")
                            .out(nullptr));
  const ExperimentResult result = experiment.run();
  ASSERT_FALSE(result.pareto.empty());
  for (const auto& t : result.pareto) EXPECT_LE(t.parameters["x"].get<double>(), 0.7);
  const auto summary = nlohmann::json::parse(std::ifstream(dir / "run" / "summary.json"));
  EXPECT_EQ(summary["pareto"].size(), result.pareto.size());
  EXPECT_EQ(summary["objectives"][1]["metric"], "b");
  const int feasible = summary["trials"]["feasible"];
  EXPECT_EQ(static_cast<std::size_t>(feasible), result.pareto.size());  // every feasible trial is on the front
  EXPECT_EQ(summary["trials"]["total"], 12);
  EXPECT_EQ(summary["constraints"], nlohmann::json::array({"x<=0.7"}));
  auto storage = open_storage("sqlite://" + (dir / "run" / "search.db").string());
  EXPECT_EQ(storage->meta("pareto")->size(), result.pareto.size());
  // A resume must optimise what the search did.
  const std::string error = testing::error_of([&] {
    Experiment again(ExperimentOptions()
                         .space((dir / "space.yaml").string())
                         .command(trial)
                         .objectives({"a:max", "b:min"})
                         .constraints({"x<=0.7"})
                         .resume(true)
                         .run_dir(dir / "run")
                         .out(nullptr));
  });
  EXPECT_NE(error.find("resume with the same --objective"), std::string::npos) << error;
}

TEST(Experiment, BadOptionsAreRefusedBeforeAnythingIsWritten) {
  TempDir dir("experiment");
  auto refused = [&](ExperimentOptions o, const std::string& says) {
    const std::string error = testing::error_of([&] { Experiment e(std::move(o)); });
    EXPECT_NE(error.find(says), std::string::npos) << error;
  };
  refused(quadratic(dir, 0).trials(0), "--trials must be from 1");
  refused(quadratic(dir, 0).recipe("r.yaml"), "give exactly one of --command CMD or --recipe");
  refused(quadratic(dir, 0).middlewares({{"bugdet", {}}}), "middleware: unknown middleware 'bugdet' (known: ");
  refused(quadratic(dir, 0).middlewares({{"budget", {{"max_trials", "ten"}}}}),
          "middleware: budget.max_trials: expected a whole number, got 'ten'");
  refused(quadratic(dir, 0).brackets(3), "--brackets needs --asha");
  refused(quadratic(dir, 0).strategy("annealing"), "annealing");
  refused(quadratic(dir, 0).space((dir / "missing.yaml").string()), "missing.yaml");
  refused(quadratic(dir, 0).objectives({"a:max", "b:up"}), "--objective 'b:up': expected METRIC:max or METRIC:min");
  refused(quadratic(dir, 0).objectives({"a:max", "a:min"}), "--objective a is given twice");
  refused(quadratic(dir, 0).constraints({"a<3"}), "--constraint 'a<3': expected METRIC<=VALUE or METRIC>=VALUE");
  refused(quadratic(dir, 0).objectives({"a:max", "b:min"}).strategy("gp"), "strategy gp optimises one objective");
  EXPECT_FALSE(std::filesystem::exists(dir / "run"));
}

}  // namespace
}  // namespace baton
