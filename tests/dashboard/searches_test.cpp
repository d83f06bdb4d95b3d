// The dashboard's searches (src/dashboard/searches.cpp): a search's trials, history and importance.
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

#ifdef BATON_HAVE_HTTPLIB
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
#endif

}  // namespace
}  // namespace baton
