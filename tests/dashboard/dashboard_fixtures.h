// What catalog_test.cpp, runs_test.cpp, searches_test.cpp and server_test.cpp share.
#pragma once

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

namespace baton::dashboard_fixtures {

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
inline nlohmann::json get(Dashboard& d, const std::string& path, int expect = 200) {
  httplib::Client client("127.0.0.1", d.port());
  auto res = client.Get(path.c_str());
  EXPECT_TRUE(res) << path;
  if (!res) return nullptr;
  EXPECT_EQ(res->status, expect) << path << ": " << res->body;
  return nlohmann::json::parse(res->body, nullptr, false);
}
#endif

inline nlohmann::json run_named(const nlohmann::json& runs, const std::string& name) {
  for (const auto& r : runs) {
    if (r["name"] == name) return r;
  }
  ADD_FAILURE() << "no run " << name << " in " << runs.dump();
  return nlohmann::json::object();
}

}  // namespace baton::dashboard_fixtures
