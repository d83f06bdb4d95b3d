// The dashboard's catalog (src/dashboard/catalog.cpp): runs and searches listed with their figures;
// bad lines and corrupt storages are problems, the rest is served.
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
#endif

}  // namespace
}  // namespace baton
