// The dashboard's API against a server on a free loopback port, over runs and a storage the test
// makes: a finished run, a run half written (its last line without a newline), a line that is
// not JSON, a search still running; bad paths, a corrupt storage, a port in use, a token.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "baton/dashboard/dashboard.h"
#include "baton/exec/storage.h"
#include "common/test_util.h"
#include "dashboard/sources.h"

#ifdef BATON_HAVE_HTTPLIB
#include <httplib.h>
#endif

namespace baton {
namespace {
namespace fs = std::filesystem;

class DashboardApi : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef BATON_HAVE_HTTPLIB
    GTEST_SKIP() << "built without cpp-httplib (libcpp-httplib-dev)";
#endif
    write_run("finished", 200, true);
    write_run("half", 50, false);
    std::ofstream(root_ / "runs" / "half" / "metrics.jsonl", std::ios::app) << R"({"step": 51, "train/lo)";
    write_run("bad", 20, true);
    std::ofstream(root_ / "runs" / "bad" / "metrics.jsonl", std::ios::app) << "not json\n"
                                                                           << R"({"step": 21, "train/loss": 0.5})"
                                                                           << "\n";
    storage_ = open_storage("sqlite://" + (root_ / "runs" / "search" / "search.db").string());
    storage_->set_meta("search", {{"direction", "minimize"}});
    for (int i = 1; i <= 5; ++i) save_trial(i, i <= 4 ? TrialStatus::kTrained : TrialStatus::kRunning, 1.0 / i);
  }
  void TearDown() override { storage_.reset(); }

  void write_run(const std::string& name, int steps, bool finished) {
    const fs::path dir = root_ / "runs" / name;
    fs::create_directories(dir / "checkpoints");
    std::ofstream m(dir / "metrics.jsonl");
    m << R"({"hyperparameters": {"max_duration": "1ep"}})"
      << "\n";
    for (int s = 1; s <= steps; ++s) {
      m << nlohmann::json{{"step", s}, {"time", 1000.0 + s}, {"train/loss", 2.0 / s}}.dump() << "\n";
      if (s % 10 == 0) m << nlohmann::json{{"step", s}, {"eval/accuracy", 0.5 + 0.002 * s}}.dump() << "\n";
      if (s % 100 == 0) m << nlohmann::json{{"step", s}, {"wall_clock/epoch_s", 9.5}}.dump() << "\n";  // an epoch ends
    }
    std::ofstream(dir / "recipe.yaml") << "model: {name: mlp}\n";
    std::ofstream(dir / "checkpoints" / "ep0-ba10.ckpt") << std::string(1000, 'x');
    if (finished) std::ofstream(dir / "summary.json") << R"({"samples_per_s": 321.0, "steps": )" << steps << "}\n";
  }
  void save_trial(int64_t id, TrialStatus status, double value) {
    Trial t;
    t.id = id;
    t.status = status;
    t.parameters = {{"lr", 0.001 * id}, {"opt", id % 2 ? "sgd" : "adam"}};
    t.metrics.intermediate = {{1, value * 2}, {2, value}};
    if (status == TrialStatus::kTrained) t.metrics.final = value;
    t.started_at = 100;
    t.ended_at = status == TrialStatus::kTrained ? 100 + id : 0;
    storage_->save_trial(t);
  }

  testing::TempDir tmp_{"dashboard"};
  fs::path root_ = tmp_.path();
  std::unique_ptr<TrialStorage> storage_;
};

#ifdef BATON_HAVE_HTTPLIB
nlohmann::json get(Dashboard& d, const std::string& path, int expect = 200) {
  httplib::Client client("127.0.0.1", d.port());
  auto res = client.Get(path.c_str());
  EXPECT_TRUE(res) << path;
  if (!res) return nullptr;
  EXPECT_EQ(res->status, expect) << path << ": " << res->body;
  return nlohmann::json::parse(res->body, nullptr, false);
}

nlohmann::json run_named(const nlohmann::json& runs, const std::string& name) {
  for (const auto& r : runs) {
    if (r["name"] == name) return r;
  }
  ADD_FAILURE() << "no run " << name << " in " << runs.dump();
  return nlohmann::json::object();
}

// Polls `path` until `ok` holds of its JSON, for at most 2 seconds (the dashboard's promise).
bool within_2s(Dashboard& d, const std::string& path, const std::function<bool(const nlohmann::json&)>& ok) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < until) {
    if (ok(get(d, path))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST_F(DashboardApi, ListsRunsAndSearchesWithTheirFigures) {
  Dashboard d(DashboardOptions().paths({(root_ / "runs").string()}).port(0));
  const auto list = get(d, "/api/runs");
  ASSERT_EQ(list["runs"].size(), 3U) << list.dump();
  const auto finished = run_named(list["runs"], "finished");
  EXPECT_EQ(finished["status"], "finished");
  EXPECT_EQ(finished["steps"], 200);
  EXPECT_DOUBLE_EQ(finished["best_accuracy"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(finished["train_loss"].get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(finished["samples_per_s"].get<double>(), 321.0);
  EXPECT_EQ(run_named(list["runs"], "half")["status"], "running");  // written just now, no summary
  EXPECT_EQ(run_named(list["runs"], "half")["steps"], 50);          // the line being written waits
  ASSERT_EQ(list["searches"].size(), 1U);
  EXPECT_EQ(list["searches"][0]["trials"], 5);
  EXPECT_DOUBLE_EQ(list["searches"][0]["best"].get<double>(), 0.25);  // minimize: trial 4
}

TEST_F(DashboardApi, ARunsDetailAndDownsampledCurves) {
  Dashboard d(DashboardOptions().paths({(root_ / "runs" / "finished").string()}).port(0));
  const std::string id = get(d, "/api/runs")["runs"][0]["id"];
  const auto detail = get(d, "/api/runs/" + id);
  EXPECT_EQ(detail["recipe"], "model: {name: mlp}\n");
  EXPECT_EQ(detail["checkpoints"][0]["name"], "ep0-ba10.ckpt");
  EXPECT_EQ(detail["checkpoints"][0]["bytes"], 1000);
  EXPECT_EQ(detail["hyperparameters"]["max_duration"], "1ep");
  const auto series = get(d, "/api/runs/" + id + "/series?keys=train/loss,eval/accuracy&points=30");
  EXPECT_EQ(series["train/loss"]["points"], 200);
  EXPECT_LE(series["train/loss"]["x"].size(), 31U);  // at most ~points, the last one kept
  EXPECT_EQ(series["train/loss"]["x"].back(), 200);
  EXPECT_DOUBLE_EQ(series["train/loss"]["y"][0].get<double>(), 2.0);  // the first bucket's highest
  EXPECT_EQ(series["eval/accuracy"]["x"].size(), 20U);                // fewer than asked: all of them
  const auto by_time = get(d, "/api/runs/" + id + "/series?keys=train/loss&x=time&points=1000");
  EXPECT_DOUBLE_EQ(by_time["train/loss"]["x"][0].get<double>(), 0.0);  // seconds since the first line
  const auto by_epoch = get(d, "/api/runs/" + id + "/series?keys=train/loss&x=epoch&points=1000");
  EXPECT_DOUBLE_EQ(by_epoch["train/loss"]["x"][49].get<double>(), 0.5);  // step 50 of 100 an epoch
  EXPECT_DOUBLE_EQ(by_epoch["train/loss"]["x"][149].get<double>(), 1.5);
  EXPECT_EQ(detail["row"]["epochs"], 2);
  get(d, "/api/runs/nope", 404);
}

TEST_F(DashboardApi, NewLinesAndTrialsShowWithin2Seconds) {
  Dashboard d(DashboardOptions().paths({(root_ / "runs").string()}).port(0).refresh_s(0.2));
  const std::string half = run_named(get(d, "/api/runs")["runs"], "half")["id"];
  std::ofstream(root_ / "runs" / "half" / "metrics.jsonl", std::ios::app) << "ss\": 0.125}\n";  // the line ends
  EXPECT_TRUE(within_2s(d, "/api/runs/" + half + "/series?keys=train/loss", [](const nlohmann::json& j) {
    return j["train/loss"]["points"] == 51 && j["train/loss"]["y"].back() == 0.125;
  }));
  save_trial(5, TrialStatus::kTrained, 0.1);  // the running trial ends with a new best
  save_trial(6, TrialStatus::kRunning, 0.0);
  const std::string search = get(d, "/api/searches")[0]["id"];
  EXPECT_TRUE(within_2s(d, "/api/searches/" + search, [](const nlohmann::json& j) {
    return j["trials"] == 6 && j["best"] == 0.1 && j["history"].size() == 5;
  }));
  fs::create_directories(root_ / "runs" / "new");  // a run that starts while the page is open
  std::ofstream(root_ / "runs" / "new" / "metrics.jsonl") << R"({"step": 1, "train/loss": 1.5})"
                                                          << "\n";
  EXPECT_TRUE(within_2s(d, "/api/runs", [](const nlohmann::json& j) { return j["runs"].size() == 4; }));
}

TEST_F(DashboardApi, ASearchsTrialsHistoryAndImportance) {
  for (int i = 6; i <= 30; ++i) save_trial(i, TrialStatus::kTrained, i % 2 ? 1.0 : 0.0);  // opt decides
  fs::create_directories(root_ / "runs" / "search" / "trials" / "3");                     // a recipe search's trial run
  std::ofstream(root_ / "runs" / "search" / "trials" / "3" / "metrics.jsonl") << R"({"step": 1, "train/loss": 1})"
                                                                              << "\n";
  Dashboard d(DashboardOptions().paths({(root_ / "runs" / "search" / "search.db").string()}).port(0));
  const auto s = get(d, "/api/searches/s1");
  ASSERT_EQ(s["trials_table"].size(), 30U);
  const auto run = s["trials_table"][2].value("run", "");  // trial 3 links to its run
  EXPECT_EQ(get(d, "/api/runs/" + run)["row"]["path"], (root_ / "runs" / "search" / "trials" / "3").string());
  EXPECT_EQ(get(d, "/api/runs/" + run)["row"]["name"], "search/trial-3");  // not "3"
  EXPECT_FALSE(s["trials_table"][1].contains("run"));
  EXPECT_EQ(s["trials_table"][4]["status"], "running");
  EXPECT_DOUBLE_EQ(s["trials_table"][0]["duration_s"].get<double>(), 1.0);
  EXPECT_EQ(s["history"].size(), 29U);
  EXPECT_DOUBLE_EQ(s["history"].back()["best"].get<double>(), 0.0);
  ASSERT_EQ(s["importance"].size(), 2U);
  EXPECT_EQ(s["importance"][0]["parameter"], "opt");
  EXPECT_GT(s["importance"][0]["importance"].get<double>(), 0.8);
  EXPECT_LT(s["importance"][1]["importance"].get<double>(), 0.2);
}

TEST_F(DashboardApi, BadLinesAndCorruptStoragesAreProblemsTheRestIsServed) {
  std::ofstream(root_ / "corrupt.db") << "this is not a database, only its name says so";
  Dashboard d(DashboardOptions()
                  .paths({(root_ / "runs").string(), (root_ / "corrupt.db").string(), (root_ / "nothing").string()})
                  .port(0));
  const auto list = get(d, "/api/runs");
  EXPECT_EQ(list["runs"].size(), 3U);
  const std::string problems = list["problems"].dump();
  EXPECT_NE(problems.find("nothing: no such file or directory"), std::string::npos) << problems;
  EXPECT_NE(problems.find("corrupt.db"), std::string::npos) << problems;
  const auto bad = get(d, "/api/runs/" + run_named(list["runs"], "bad")["id"].get<std::string>());
  ASSERT_EQ(bad["problems"].size(), 1U);
  EXPECT_NE(bad["problems"][0].get<std::string>().find("metrics.jsonl:24: not a JSON object"), std::string::npos)
      << bad["problems"];
  EXPECT_EQ(bad["row"]["steps"], 21);  // the lines after it are read
}

TEST_F(DashboardApi, RefusesWhatItCannotServe) {
  auto error = [](DashboardOptions o) {
    try {
      Dashboard d(std::move(o));
    } catch (const DashboardError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::ofstream(root_ / "file.txt") << "hello";
  EXPECT_NE(error(DashboardOptions().paths({(root_ / "file.txt").string()}).port(0)).find("neither a run directory"),
            std::string::npos);
  const std::string missing = "sqlite://" + (root_ / "no" / "search.db").string();
  EXPECT_NE(error(DashboardOptions().paths({missing}).port(0)).find("no such file"), std::string::npos);
  EXPECT_FALSE(fs::exists(root_ / "no"));  // read-only: opening it did not create it
  Dashboard first(DashboardOptions().paths({(root_ / "runs").string()}).port(0));
  EXPECT_NE(error(DashboardOptions().paths({(root_ / "runs").string()}).port(first.port())).find("in use?"),
            std::string::npos);
  EXPECT_NE(error(DashboardOptions().paths({(root_ / "runs").string()}).host("0.0.0.0").port(0)).find("--token"),
            std::string::npos);
}

TEST_F(DashboardApi, ATokenGuardsTheApi) {
  Dashboard d(DashboardOptions().paths({(root_ / "runs").string()}).port(0).token("s3cret"));
  get(d, "/api/runs", 401);
  EXPECT_EQ(get(d, "/api/runs?token=s3cret")["runs"].size(), 3U);
  EXPECT_NE(d.url().find("?token=s3cret"), std::string::npos);
}
#endif

TEST(DashboardSources, DownsamplingKeepsEachBucketsExtremesAndTheLastPoint) {
  std::vector<double> x, y, dx, dy;
  for (int i = 0; i < 100000; ++i) {
    x.push_back(i);
    y.push_back(i == 31337 ? 50.0 : std::sin(i * 0.001));
  }
  dashboard::downsample(x, y, 900, dx, dy);
  EXPECT_LE(dx.size(), 901U);
  EXPECT_NE(std::find(dy.begin(), dy.end(), 50.0), dy.end());  // a spike survives
  EXPECT_EQ(dx.back(), 99999);
}

}  // namespace
}  // namespace baton
