// PostgreSQL storage against a real, throw-away server: initdb into a temporary folder and
// pg_ctl start on a free loopback port (as the `postgres` user when the test runs as root, since
// PostgreSQL refuses to run as root). Skipped, saying so, where no server binary is installed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "baton/exec/storage.h"
#include "baton/io/file.h"
#include "common/storage_contract.h"
#include "common/test_util.h"
#include "dashboard/sources.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

std::optional<fs::path> server_bin_dir() {
  std::optional<fs::path> best;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    if (fs::exists(entry.path() / "bin" / "initdb") && fs::exists(entry.path() / "bin" / "pg_ctl")) {
      if (!best || entry.path().filename().string() > best->parent_path().filename().string())
        best = entry.path() / "bin";
    }
  }
  return best;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

class Server {
 public:
  // Starts one; `error` says why not.
  bool start(std::string& error) {
    auto bin = server_bin_dir();
    if (!bin) {
      error = "skip";
      return false;
    }
    tmp_.emplace("pg");
    dir_ = tmp_->path();
    std::string as;
    if (::geteuid() == 0) {
      const passwd* user = ::getpwnam("postgres");
      if (!user) user = ::getpwnam("nobody");
      if (!user) {
        error = "running as root and no postgres or nobody user to run the server as";
        return false;
      }
      if (::chown(dir_.c_str(), user->pw_uid, user->pw_gid) != 0) {
        error = "cannot chown " + dir_.string();
        return false;
      }
      as = "runuser -u " + std::string(user->pw_name) + " -- ";
    }
    port_ = free_port();
    ctl_ = as + (*bin / "pg_ctl").string() + " -D " + quote((dir_ / "data").string());
    const std::string log = (dir_ / "initdb.log").string();
    const std::string initdb = as + (*bin / "initdb").string() + " -D " + quote((dir_ / "data").string()) +
                               " -U baton --auth=trust --no-sync >" + quote(log) + " 2>&1";
    if (std::system(initdb.c_str()) != 0) {
      error = "initdb failed: " + read(log);
      return false;
    }
    const std::string start = ctl_ + " -w -t 60 -l " + quote((dir_ / "server.log").string()) + " -o " +
                              quote("-p " + std::to_string(port_) + " -k " + dir_.string() +
                                    " -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50") +
                              " start >" + quote(log) + " 2>&1";
    if (std::system(start.c_str()) != 0) {
      error = "pg_ctl start failed: " + read(log) + read((dir_ / "server.log").string());
      return false;
    }
    started_ = true;
    return true;
  }
  ~Server() {
    if (started_) std::system((ctl_ + " -m immediate stop >/dev/null 2>&1").c_str());
  }
  std::string url() const { return "postgresql://baton@127.0.0.1:" + std::to_string(port_) + "/postgres"; }

 private:
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str().substr(0, 2000);
  }
  std::optional<testing::TempDir> tmp_;  // removed, with the server's files, after the server stops
  fs::path dir_;
  std::string ctl_;
  int port_ = 0;
  bool started_ = false;
};

class Postgres : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    if (!server_.start(error)) {
      if (error == "skip")
        GTEST_SKIP() << "no PostgreSQL server binary (initdb, pg_ctl) under /usr/lib/postgresql: "
                        "scripts/install-deps.sh installs the postgresql package";
      FAIL() << error;
    }
  }
  Server server_;
};

// The storage contract (tests/common/storage_contract.h), as SQLite keeps it: each part on a new
// server (the fixture starts one per test).
TEST_F(Postgres, KeepsTheStorageContractForTrials) {
  PostgresStorage storage(server_.url());
  testing::check_trials_round_trip(storage);
}

TEST_F(Postgres, KeepsTheStorageContractForMeta) {
  PostgresStorage storage(server_.url());
  testing::check_meta(storage);
}

TEST_F(Postgres, KeepsTheStorageContractForTheWorkQueue) {
  PostgresStorage storage(server_.url());
  testing::check_work_queue(storage);
}

// 4 worker processes each create 25 trials and claim waiting ones until none is left: exactly
// 100 distinct trials, each claimed and run once.
TEST_F(Postgres, FourWorkerProcessesTimesTwentyFiveTrialsRunEachExactlyOnce) {
  const testing::TempDir tmp("pg_workers");
  const fs::path dir = tmp.path();
  PostgresStorage(server_.url());  // the schema, once
  const auto codes = testing::run_in_processes(4, [&](int w) {
    PostgresStorage storage(server_.url());
    const std::string me = "w" + std::to_string(w) + ":" + std::to_string(::getpid());
    std::ofstream ran(dir / ("ran" + std::to_string(w) + ".txt"));
    for (int i = 0; i < 25; ++i) {
      if (!storage.create_trial({{"worker", w}, {"i", i}}, 1000)) throw std::runtime_error("limit?");
      // Claim as we go, as a worker does: the claims interleave with the other processes' creates.
      if (auto t = storage.claim_trial(me)) {
        ran << t->id << "\n";
        t->status = TrialStatus::kTrained;
        t->metrics.final = static_cast<double>(t->id);
        if (!storage.save_owned(*t, me)) throw std::runtime_error("lost a trial it claimed");
      }
    }
    for (;;) {
      auto t = storage.claim_trial(me);
      if (!t) {
        if (storage.states().size() == 100) break;
        ::usleep(2000);
        continue;
      }
      ran << t->id << "\n";
      t->status = TrialStatus::kTrained;
      t->metrics.final = static_cast<double>(t->id);
      if (!storage.save_owned(*t, me)) throw std::runtime_error("lost a trial it claimed");
    }
  });
  EXPECT_EQ(codes, std::vector<int>(4, 0));
  std::map<int64_t, int> runs;
  for (int w = 0; w < 4; ++w) {
    std::ifstream in(dir / ("ran" + std::to_string(w) + ".txt"));
    for (int64_t id; in >> id;) ++runs[id];
  }
  EXPECT_EQ(runs.size(), 100U);
  for (const auto& [id, n] : runs) EXPECT_EQ(n, 1) << "trial " << id << " ran " << n << " times";
  const auto trials = PostgresStorage(server_.url()).load_trials();
  ASSERT_EQ(trials.size(), 100U);
  std::set<std::string> params;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    EXPECT_EQ(trials[i].id, static_cast<int64_t>(i));
    EXPECT_EQ(trials[i].status, TrialStatus::kTrained);
    params.insert(trials[i].parameters.dump());
  }
  EXPECT_EQ(params.size(), 100U) << "every created trial is kept, none overwritten";
  baton::remove_tree(dir);
}

// `workers` processes of `baton search --join --storage URL` started together, each writing to
// dir/wN.log; waits for all of them.
void run_cli_workers(const fs::path& dir, const std::string& url, int workers, const std::string& args) {
  const std::string baton = std::string(BATON_BIN_DIR) + "/baton";
  std::string all;
  for (int w = 0; w < workers; ++w) {
    all += baton + " search " + (dir / "space.yaml").string() + " --join " + args + " --storage " + url +
           " --run-dir " + (dir / ("w" + std::to_string(w))).string() + " >" +
           (dir / ("w" + std::to_string(w) + ".log")).string() + " 2>&1 & ";
  }
  all += "wait\n";
  std::ofstream(dir / "workers.sh") << all;
  ASSERT_EQ(std::system(("bash " + (dir / "workers.sh").string()).c_str()), 0);
}

std::string log_of(const fs::path& dir, int w) {
  std::ifstream log(dir / ("w" + std::to_string(w) + ".log"));
  std::stringstream s;
  s << log.rdbuf();
  return s.str();
}

// The same through the command line: 4 `baton search --join` workers, 100 trials in all.
TEST_F(Postgres, FourBatonSearchWorkersShareOneSearch) {
  const testing::TempDir dir_tmp("pg_cli");
  const fs::path dir = dir_tmp.path();
  baton::remove_tree(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "x: {_type: uniform, _value: [0, 1]}\n";
  std::ofstream(dir / "trial.sh") << "echo $BATON_TRIAL_ID >> " << (dir / "ran.txt").string()
                                  << "\necho 'baton: {\"final\": 1}'\n";
  run_cli_workers(dir, server_.url(), 4,
                  "--trials 100 --strategy random --command " + quote("sh " + (dir / "trial.sh").string()));
  std::map<int64_t, int> runs;
  std::ifstream in(dir / "ran.txt");
  for (int64_t id; in >> id;) ++runs[id];
  EXPECT_EQ(runs.size(), 100U);
  for (const auto& [id, n] : runs) EXPECT_EQ(n, 1) << "trial " << id << " ran " << n << " times";
  std::set<std::string> workers;
  for (const auto& t : PostgresStorage(server_.url()).load_trials()) {
    EXPECT_EQ(t.status, TrialStatus::kTrained);
    workers.insert(t.worker);
  }
  EXPECT_GE(workers.size(), 2U);
  for (int w = 0; w < 4; ++w)
    EXPECT_NE(log_of(dir, w).find("trials 100/100 done"), std::string::npos) << log_of(dir, w);
  baton::remove_tree(dir);
}

// The model strategies over PostgreSQL: two workers share one search, each learning from the
// other's trials. A quadratic bowl in 2-D, where 30 random trials get to ~1e-2 of the minimum.
void two_model_workers(const std::string& url, const std::string& strategy, int trials, double goal) {
  const testing::TempDir dir_tmp("pg_" + strategy);
  const fs::path dir = dir_tmp.path();
  baton::remove_tree(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.yaml") << "x: {_type: uniform, _value: [0, 1]}\ny: {_type: uniform, _value: [0, 1]}\n";
  std::ofstream(dir / "trial.py")
      << "import json, os\np = json.loads(os.environ['BATON_TRIAL_PARAMETERS'])\n"
      << "print('baton: ' + json.dumps({'final': (p['x'] - 0.3) ** 2 + (p['y'] - 0.7) ** 2}))\n";
  run_cli_workers(dir, url, 2,
                  "--trials " + std::to_string(trials) + " --strategy " + strategy +
                      " --direction minimize --command " + quote("python3 " + (dir / "trial.py").string()));
  double best = INFINITY;
  std::set<std::string> workers;
  for (const auto& t : PostgresStorage(url).load_trials()) {
    EXPECT_EQ(t.status, TrialStatus::kTrained);
    if (t.metrics.final) best = std::min(best, *t.metrics.final);
    workers.insert(t.worker);
  }
  EXPECT_EQ(PostgresStorage(url).load_trials().size(), static_cast<std::size_t>(trials));
  EXPECT_EQ(workers.size(), 2U) << log_of(dir, 0) << log_of(dir, 1);
  EXPECT_LT(best, goal) << log_of(dir, 0) << log_of(dir, 1);
  baton::remove_tree(dir);
}

// `baton dashboard postgresql://...`: the search's trials as the page gets them, and a trial
// saved while it watches.
TEST_F(Postgres, TheDashboardReadsASearchFromPostgres) {
  PostgresStorage storage(server_.url());
  storage.set_meta("search", {{"direction", "minimize"}});
  auto save = [&](int64_t id, double value) {
    Trial t;
    t.id = id;
    t.status = TrialStatus::kTrained;
    t.parameters = {{"x", value}};
    t.metrics.final = value;
    storage.save_trial(t);
  };
  for (int64_t i = 1; i <= 3; ++i) save(i, 1.0 / static_cast<double>(i));
  dashboard::Catalog catalog({server_.url()});
  catalog.refresh();
  auto s = catalog.search("s1");
  ASSERT_EQ(s["trials_table"].size(), 3U) << s.dump();
  EXPECT_DOUBLE_EQ(s["best"].get<double>(), 1.0 / 3);
  save(4, 0.1);
  catalog.refresh();
  s = catalog.search("s1");
  EXPECT_EQ(s["trials_table"].size(), 4U);
  EXPECT_DOUBLE_EQ(s["best"].get<double>(), 0.1);
  EXPECT_EQ(s["problem"], "");
}

TEST_F(Postgres, TwoGpWorkersShareTheirModel) { two_model_workers(server_.url(), "gp", 30, 1e-3); }
TEST_F(Postgres, TwoTpeWorkersShareTheirModel) { two_model_workers(server_.url(), "tpe", 40, 2e-3); }

}  // namespace
}  // namespace baton
