// The distributed engine (src/exec/distributed.cpp): worker processes share one search through a
// storage file, each trial run once.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "baton/io/file.h"
#include "common/storage_contract.h"

#include "baton/exec/distributed.h"
#include "baton/exec/engine.h"
#include "baton/exec/middleware.h"
#include "baton/exec/search.h"
#include "baton/exec/storage.h"
#include "common/test_util.h"

namespace baton {
namespace {

// A strategy that counts what it learns.
class CountingStrategy : public Strategy {
 public:
  explicit CountingStrategy(uint64_t seed)
      : random_(SearchSpace::from_json({{"x", {{"_type", "uniform"}, {"_value", {0, 1}}}}}), seed) {}
  std::string name() const override { return "counting"; }
  std::optional<nlohmann::json> suggest() override { return random_.suggest(); }
  void observe(const Trial& t) override { observed.insert(t.id); }
  std::set<int64_t> observed;

 private:
  RandomStrategy random_;
};

TEST(DistributedEngine, TwoWorkersShareOneSearchEachTrialOnceAndLearnFromEachOther) {
  const testing::TempDir dir_tmp("distributed");
  const auto dir = dir_tmp.path();
  const auto path = (dir / "shared.db").string();
  std::mutex mutex;
  std::map<int64_t, int> runs;  // trial id -> runs started, across both workers
  TrialFunction function = [&](TrialContext& t) {
    int run = 0;
    {
      std::lock_guard lock(mutex);
      run = ++runs[t.trial_id()];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (t.trial_id() % 5 == 0 && run == 1) throw std::runtime_error("first run of a fifth trial fails");
    t.report_final(t.parameters()["x"].get<double>());
  };
  auto worker = [&](const std::string& name, CountingStrategy& strategy) {
    auto storage = std::make_shared<SqliteStorage>(path);
    auto local = std::make_shared<ThreadPoolEngine>(function, 2);
    auto engine = std::make_shared<DistributedEngine>(
        storage, local, DistributedOptions().worker(name).limit(40).heartbeat_s(0.1).stale_after_s(5).poll_s(0.02));
    Chain chain({std::make_shared<FailureHandler>(FailureHandlerOptions().retries(1))});
    chain.set_engine(engine);
    run_search(strategy, chain, 40, true);
    chain.shutdown();
  };
  CountingStrategy sa(1), sb(2);
  std::thread a([&] { worker("a:1", sa); });
  std::thread b([&] { worker("b:1", sb); });
  a.join();
  b.join();
  const auto trials = SqliteStorage(path).load_trials();
  ASSERT_EQ(trials.size(), 40U);
  std::set<std::string> workers;
  for (const auto& t : trials) {
    EXPECT_EQ(t.status, TrialStatus::kTrained) << t.id << " " << t.error;
    EXPECT_EQ(t.attempts, t.id % 5 == 0 ? 2 : 1) << t.id;
    EXPECT_EQ(runs[t.id], t.id % 5 == 0 ? 2 : 1) << "trial " << t.id << " ran " << runs[t.id] << " times";
    workers.insert(t.worker);
  }
  EXPECT_EQ(workers, (std::set<std::string>{"a:1", "b:1"}));
  // Each strategy learned the results of trials the other worker ran.
  EXPECT_GT(sa.observed.size(), 30U);
  EXPECT_GT(sb.observed.size(), 30U);
  baton::remove_tree(dir);
}

}  // namespace
}  // namespace baton
