// SQLite storage (src/exec/storage.cpp): an engine writes every change, a fresh one resumes from it,
// many processes share one file, damaged files are said.
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

TEST(SqliteStorage, AnEngineWritesEveryChangeAndAFreshOneResumesFromIt) {
  const testing::TempDir dir_tmp("storage");
  const auto dir = dir_tmp.path();
  const std::string url = "sqlite:///" + (dir / "search.db").string();
  {
    auto storage = open_storage(url);
    SequentialEngine engine([](TrialContext& t) {
      t.report_intermediate(0.5, 1);
      t.report_final(t.parameters()["x"].get<double>());
    });
    engine.set_observer([&](const Trial& t) { storage->save_trial(t); });
    engine.submit({{"x", 1.0}});
    engine.submit({{"x", 2.0}});
    storage->set_meta("direction", "maximize");
  }
  auto storage = open_storage(url);
  const auto trials = storage->load_trials();
  ASSERT_EQ(trials.size(), 2U);
  EXPECT_EQ(trials[1].status, TrialStatus::kTrained);
  EXPECT_EQ(*trials[1].metrics.final, 2.0);
  EXPECT_EQ(trials[1].metrics.intermediate.size(), 1U);
  EXPECT_EQ(*storage->meta("direction"), "maximize");
  EXPECT_FALSE(storage->meta("nothing"));
  baton::remove_tree(dir);
}

TEST(SqliteStorage, ManyProcessesWriteOneFileWithoutDatabaseIsLocked) {
  const testing::TempDir dir_tmp("storage_mp");
  const auto dir = dir_tmp.path();
  const auto path = (dir / "shared.db").string();
  open_storage(path);  // created once, WAL on
  const auto codes = testing::run_in_processes(4, [&](int w) {
    SqliteStorage storage(path);
    for (int i = 0; i < 50; ++i) {
      Trial t;
      t.id = w * 1000 + i;
      t.status = TrialStatus::kTrained;
      t.metrics.final = i;
      storage.save_trial(t);
    }
  });
  EXPECT_EQ(codes, std::vector<int>(4, 0));
  EXPECT_EQ(SqliteStorage(path).load_trials().size(), 200U);
  baton::remove_tree(dir);
}

TEST(SqliteStorage, BadUrlsAndDamagedFilesSayWhat) {
  const testing::TempDir dir_tmp("storage_bad");
  const auto dir = dir_tmp.path();
  EXPECT_THROW(open_storage("mysql://x"), std::invalid_argument);
  std::ofstream(dir / "junk.db") << "this is not a database, just some text that is long enough to be read";
  try {
    open_storage((dir / "junk.db").string());
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("junk.db"), std::string::npos) << e.what();
  }
  baton::remove_tree(dir);
}

// The storage contract (tests/common/storage_contract.h), each part on a new database; the
// PostgreSQL tests run the same checks.
TEST(SqliteStorage, KeepsTheStorageContract) {
  const testing::TempDir dir("storage_contract");
  SqliteStorage trials(dir.file("trials.db"));
  testing::check_trials_round_trip(trials);
  SqliteStorage meta(dir.file("meta.db"));
  testing::check_meta(meta);
  SqliteStorage queue(dir.file("queue.db"));
  testing::check_work_queue(queue);
}

}  // namespace
}  // namespace baton
