#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "baton/exec/engine.h"
#include "baton/exec/storage.h"

namespace baton {
namespace {

std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("baton_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

TEST(SqliteStorage, AnEngineWritesEveryChangeAndAFreshOneResumesFromIt) {
  const auto dir = temp_dir("storage");
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
  std::filesystem::remove_all(dir);
}

TEST(SqliteStorage, ManyProcessesWriteOneFileWithoutDatabaseIsLocked) {
  const auto dir = temp_dir("storage_mp");
  const auto path = (dir / "shared.db").string();
  open_storage(path);  // created once, WAL on
  std::vector<pid_t> children;
  for (int w = 0; w < 4; ++w) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int code = 0;
      try {
        SqliteStorage storage(path);
        for (int i = 0; i < 50; ++i) {
          Trial t;
          t.id = w * 1000 + i;
          t.status = TrialStatus::kTrained;
          t.metrics.final = i;
          storage.save_trial(t);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "worker %d: %s\n", w, e.what());
        code = 1;
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(SqliteStorage(path).load_trials().size(), 200U);
  std::filesystem::remove_all(dir);
}

TEST(SqliteStorage, BadUrlsAndDamagedFilesSayWhat) {
  const auto dir = temp_dir("storage_bad");
  EXPECT_THROW(open_storage("mysql://x"), std::invalid_argument);
  std::ofstream(dir / "junk.db") << "this is not a database, just some text that is long enough to be read";
  try {
    open_storage((dir / "junk.db").string());
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("junk.db"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace baton
