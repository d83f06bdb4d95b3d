// The dashboard's runs (src/dashboard/runs.cpp): a run's detail, curves downsampled keeping each
// bucket's extremes, new lines shown within 2 seconds.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "baton/dashboard/dashboard.h"
#include "baton/exec/storage.h"
#include "common/test_util.h"
#include "dashboard/dashboard_fixtures.h"
#include "dashboard/sources.h"

#ifdef BATON_HAVE_HTTPLIB
#include <httplib.h>
#endif

namespace baton {
namespace {

using namespace dashboard_fixtures;  // NOLINT(google-build-using-namespace)
namespace fs = std::filesystem;

// Polls `path` until `ok` holds of its JSON, for at most 2 seconds (the dashboard's promise).
bool within_2s(Dashboard& d, const std::string& path, const std::function<bool(const nlohmann::json&)>& ok) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < until) {
    if (ok(get(d, path))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

#ifdef BATON_HAVE_HTTPLIB
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
