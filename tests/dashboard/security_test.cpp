// The dashboard against a hostile user and a hostile web page, on a loopback port (ctest label
// security): no file outside the folders it was given is served (links out of a run, a run that is a
// link out, files the traces route does not list, "../"), only the host names it serves are
// answered (DNS rebinding), a storage password is never shown, slow clients starve no one, and a
// FIFO in a run stalls nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "baton/dashboard/dashboard.h"
#include "common/test_util.h"
#include "dashboard/raw_http.h"

namespace baton::dashboard {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kSecret = "TOP-SECRET-4711";

class DashboardSecurity : public ::testing::Test {
 protected:
  void SetUp() override {
    // Outside the runs: what must never be served.
    fs::create_directories(root_ / "private" / "run");
    std::ofstream(root_ / "private" / "secret.txt") << kSecret << "\n";
    std::ofstream(root_ / "private" / "secret.json") << R"({"secret": ")" << kSecret << R"("})";
    std::ofstream(root_ / "private" / "run" / "metrics.jsonl") << R"({"step": 1, "secret/)" << kSecret << "\": 1}\n";
    std::ofstream(root_ / "private" / "run" / "recipe.yaml") << kSecret << "\n";
    // The runs given to the dashboard.
    const fs::path run = root_ / "runs" / "good";
    fs::create_directories(run / "traces");
    fs::create_directories(run / "checkpoints");
    std::ofstream(run / "metrics.jsonl") << R"({"step": 1, "train/loss": 0.5})"
                                         << "\n";
    std::ofstream(run / "traces" / "ok.json") << R"({"traceEvents": []})";
    std::ofstream(run / "traces" / "notes.txt") << kSecret;
    fs::create_symlink(root_ / "private" / "secret.json", run / "traces" / "leak.json");
    fs::create_symlink(root_ / "private" / "secret.txt", run / "recipe.yaml");
    fs::create_symlink(root_ / "private" / "secret.json", run / "summary.json");
    fs::create_symlink(root_ / "private" / "secret.txt", run / "checkpoints" / "leak.ckpt");
    fs::create_directories(root_ / "runs" / "linked_metrics");
    fs::create_symlink(root_ / "private" / "run" / "metrics.jsonl",
                       root_ / "runs" / "linked_metrics" / "metrics.jsonl");
    fs::create_symlink(root_ / "private" / "run", root_ / "runs" / "linked_run");  // a whole run that is a link out
    fs::create_directories(root_ / "runs" / "fifo");
    std::ofstream(root_ / "runs" / "fifo" / "metrics.jsonl") << R"({"step": 1, "train/loss": 0.5})"
                                                             << "\n";
    ::mkfifo((root_ / "runs" / "fifo" / "recipe.yaml").c_str(), 0644);
    ::mkfifo((root_ / "runs" / "fifo" / "summary.json").c_str(), 0644);
  }

  std::unique_ptr<Dashboard> start(DashboardOptions options) {
    options.port(0).refresh_s(0.2);
    if (options.paths().empty()) options.paths({(root_ / "runs").string()});
    return std::make_unique<Dashboard>(options);
  }
  static std::string get(int port, const std::string& path, const std::string& host = "127.0.0.1") {
    return ask(port, "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
  }

  testing::TempDir tmp_{"security"};
  fs::path root_ = tmp_.path();
};

TEST_F(DashboardSecurity, NoFileOutsideTheGivenFoldersIsServed) {
  auto d = start({});
  const int port = d->port();
  const std::string runs = get(port, "/api/runs");
  ASSERT_THAT(runs, HasSubstr("HTTP/1.1 200"));
  EXPECT_THAT(runs, Not(HasSubstr(kSecret)));
  const auto list = nlohmann::json::parse(body_of(runs));
  std::vector<std::string> everything = {runs};
  for (const auto& run : list["runs"]) {
    const std::string id = run["id"];
    EXPECT_NE(run["name"], "linked_run") << "a run that is a link out of the folder is listed";
    everything.push_back(get(port, "/api/runs/" + id));
    everything.push_back(get(port, "/api/runs/" + id + "/series?keys=train/loss,secret/" + std::string(kSecret)));
    for (const std::string trace : {"ok.json", "leak.json", "notes.txt", "..%2Frecipe.yaml", "%2E%2E%2Fsummary.json"}) {
      everything.push_back(get(port, "/api/runs/" + id + "/traces/" + trace));
    }
  }
  for (const auto& answer : everything) EXPECT_THAT(answer, Not(HasSubstr(kSecret)));
  // What is inside is served: the listed trace, the run's own metrics.
  std::string id;
  for (const auto& run : list["runs"]) {
    if (run["name"] == "good") id = run["id"];
  }
  ASSERT_FALSE(id.empty());
  EXPECT_THAT(get(port, "/api/runs/" + id + "/traces/ok.json"), HasSubstr("traceEvents"));
  const auto detail = nlohmann::json::parse(body_of(get(port, "/api/runs/" + id)));
  EXPECT_EQ(detail["traces"].size(), 1U);       // ok.json: not the link, not the .txt
  EXPECT_EQ(detail["checkpoints"].size(), 0U);  // the link out is not listed
  EXPECT_EQ(detail["recipe"], "");
}

TEST_F(DashboardSecurity, OnlyTheHostNamesItServesAreAnswered) {
  auto d = start(DashboardOptions().allowed_hosts({"dash.example.org"}));
  const int port = d->port();
  const std::string p = ":" + std::to_string(port);
  for (const std::string& host :
       std::vector<std::string>{"evil.example.com", "evil.example.com" + p, "127.0.0.1.evil.com", "localhost.evil",
                                "dash.example.org.evil.com", ""}) {
    for (const std::string path : {"/", "/api/runs", "/page/app.js"}) {
      const std::string answer = get(port, path, host);
      EXPECT_THAT(answer, HasSubstr("HTTP/1.1 403")) << host << path;
      EXPECT_THAT(answer, Not(HasSubstr("\"runs\""))) << host;
    }
  }
  for (const std::string& host :
       std::vector<std::string>{"127.0.0.1" + p, "localhost" + p, "LOCALHOST", "[::1]" + p, "dash.example.org" + p}) {
    EXPECT_THAT(get(port, "/api/runs", host), HasSubstr("HTTP/1.1 200")) << host;
  }
}

TEST_F(DashboardSecurity, AStoragePasswordIsNeverShown) {
  const std::string url = "postgresql://baton:hunter2-secret@127.0.0.1:1/nothing?password=hunter2-secret";
  auto d = start(DashboardOptions().paths({(root_ / "runs").string(), url}));
  const int port = d->port();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string runs = get(port, "/api/runs");
  EXPECT_THAT(runs, HasSubstr("postgresql://baton:***@127.0.0.1:1/nothing?password=***"));
  EXPECT_THAT(runs, Not(HasSubstr("hunter2")));
  EXPECT_THAT(get(port, "/api/searches"), Not(HasSubstr("hunter2")));
  EXPECT_THAT(get(port, "/api/searches/s1"), Not(HasSubstr("hunter2")));
  for (const auto& problem : d->problems()) EXPECT_THAT(problem, Not(HasSubstr("hunter2")));
}

TEST_F(DashboardSecurity, SlowClientsStarveNoOneAndAFifoStallsNothing) {
  auto d = start({});
  const int port = d->port();
  std::vector<int> slow;
  for (int i = 0; i < 16; ++i) {
    slow.push_back(connect_to(port));
    send_all(slow.back(), "G");
  }
  for (int round = 0; round < 3; ++round) {
    for (int fd : slow) send_all(fd, "E");  // a header byte now and then
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THAT(get(port, "/api/runs"), HasSubstr("HTTP/1.1 200"));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  for (int fd : slow) ::close(fd);
  // The run whose recipe.yaml and summary.json are FIFOs: listed and answered, nothing waits on them.
  const auto list = nlohmann::json::parse(body_of(get(port, "/api/runs")));
  bool found = false;
  for (const auto& run : list["runs"]) {
    if (run["name"] != "fifo") continue;
    found = true;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THAT(get(port, "/api/runs/" + run["id"].get<std::string>()), HasSubstr("HTTP/1.1 200"));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  }
  EXPECT_TRUE(found);
}

TEST_F(DashboardSecurity, APortOutOfRangeIsRefusedNotListenedOnElsewhere) {
  try {
    Dashboard d(DashboardOptions().paths({(root_ / "runs").string()}).port(99999));
    ADD_FAILURE() << "listening on " << d.url();
  } catch (const DashboardError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--port 99999: a port is a number from 1 to 65535"));
  }
}

}  // namespace
}  // namespace baton::dashboard
