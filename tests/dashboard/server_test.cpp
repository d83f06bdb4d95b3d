// The dashboard's server (src/dashboard/server.cpp): what it cannot serve is refused; a token guards
// the API.
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

}  // namespace
}  // namespace baton
