// MLflow (src/loggers/mlflow_logger.cpp): params, the git commit, nothing lost to a server that is down,
// and a hostile server kept to its place.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/core/engine.h"
#include "baton/core/state.h"
#include "baton/io/file.h"
#include "baton/loggers/in_memory_logger.h"
#include "baton/loggers/mlflow_logger.h"
#include "common/scripted_server.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::TempDir;

TEST(Mlflow, TheRecipeBecomesDottedParamsWithListsAsJsonAndLongValuesCut) {
  const nlohmann::json recipe = {{"optimizer", {{"name", "sgd"}, {"lr", 0.1}}},
                                 {"eval_metrics", {"accuracy", "f1"}},
                                 {"seed", 17},
                                 {"notes", std::string(7000, 'x')}};
  const auto params = mlflow_params(recipe);
  const std::map<std::string, std::string> got(params.begin(), params.end());
  EXPECT_EQ(got.at("optimizer.name"), "sgd");
  EXPECT_EQ(got.at("optimizer.lr"), "0.1");
  EXPECT_EQ(got.at("eval_metrics"), R"(["accuracy","f1"])");
  EXPECT_EQ(got.at("seed"), "17");
  EXPECT_EQ(got.at("notes").size(), 6000u);
  EXPECT_EQ(got.size(), 5u);
}

TEST(Mlflow, TheGitCommitIsReadFromTheRecipesWorkTreeOrIsEmpty) {
  const TempDir dir("git");
  const std::string commit(40, 'a'), other(40, 'b');
  std::filesystem::create_directories(dir.path() / ".git/refs/heads");
  std::filesystem::create_directories(dir.path() / "recipes");
  testing::write_file(dir.path() / ".git/HEAD", "ref: refs/heads/main\n");
  testing::write_file(dir.path() / ".git/refs/heads/main", commit + "\n");
  EXPECT_EQ(git_commit_of((dir.path() / "recipes/r.yaml").string()), commit);
  std::filesystem::remove(dir.path() / ".git/refs/heads/main");  // packed, as after git gc
  testing::write_file(dir.path() / ".git/packed-refs", "# pack-refs\n" + other + " refs/heads/main\n");
  EXPECT_EQ(git_commit_of((dir.path() / "recipes/r.yaml").string()), other);
  testing::write_file(dir.path() / ".git/HEAD", commit + "\n");  // detached
  EXPECT_EQ(git_commit_of((dir.path() / "r.yaml").string()), commit);
  baton::remove_tree(dir.path() / ".git");
  EXPECT_EQ(git_commit_of((dir.path() / "r.yaml").string()), git_commit_of("/r.yaml"));
}

// The lines of a run folder's file, parsed.
std::vector<nlohmann::json> json_lines(const std::filesystem::path& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(testing::read_file(path));
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// Nothing listens on port 1 here: every request is refused at once.
MlflowOptions unreachable(const std::filesystem::path& folder) {
  return MlflowOptions()
      .tracking_uri("http://127.0.0.1:1")
      .folder(folder.string())
      .flush_seconds(0.2)
      .max_buffered(100);
}

TEST(Mlflow, AServerThatIsDownLosesNothingEveryEntryIsLeftInTheUnsentFileInOrder) {
  const TempDir dir("mlflow-down");
  MlflowLogger logger(unreachable(dir.path()).run_name("r"));
  logger.log_hyperparameters({{"optimizer", {{"lr", 0.1}}}});
  for (int64_t step = 1; step <= 1000; ++step)
    logger.log_metrics({{"train/loss", 1.0 / step}}, step);  // 10x the buffer
  logger.set_end_status("KILLED");
  logger.start();
  logger.post_close();
  EXPECT_EQ(logger.unsent(), 1001);
  EXPECT_EQ(logger.run_id(), "");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "mlflow_pending.jsonl"));
  const auto lines = json_lines(dir.path() / "mlflow_unsent.jsonl");
  ASSERT_EQ(lines.size(), 1 + 1 + 1000 + 1u);  // header, the param, the metrics, the end
  EXPECT_EQ(lines[0]["tracking_uri"], "http://127.0.0.1:1");
  EXPECT_EQ(lines[0]["run_name"], "r");
  EXPECT_THAT(lines[0]["error"].get<std::string>(), ::testing::HasSubstr("connect"));
  EXPECT_EQ(lines[1], (nlohmann::json{{"param", "optimizer.lr"}, {"value", "0.1"}}));
  for (int64_t step = 1; step <= 1000; ++step) {
    ASSERT_EQ(lines[static_cast<size_t>(step) + 1]["step"], step);
    ASSERT_EQ(lines[static_cast<size_t>(step) + 1]["value"], 1.0 / static_cast<double>(step));
  }
  EXPECT_EQ(lines.back(), (nlohmann::json{{"end", "KILLED"}}));
}

TEST(Mlflow, AResumedRunSendsWhatTheServerDidNotHaveFromThePendingAndUnsentFiles) {
  const TempDir dir("mlflow-resume");
  const auto metric = [](int64_t step) {
    return nlohmann::json{{"metric", "loss"}, {"value", step}, {"step", step}, {"timestamp", 1}}.dump() + "\n";
  };
  // Killed: the server had the first two lines of the pending file; the last line was cut short.
  const std::string sent = metric(1) + metric(2);
  testing::write_file(dir.path() / "mlflow_pending.jsonl", sent + metric(3) + metric(4) + R"({"metric": "lo)");
  testing::write_file(
      dir.path() / "mlflow.json",
      nlohmann::json{{"tracking_uri", "http://127.0.0.1:1"}, {"run_id", "abc"}, {"sent", sent.size()}}.dump());
  testing::write_file(dir.path() / "mlflow_unsent.jsonl", R"({"tracking_uri": "http://127.0.0.1:1"})"
                                                          "\n" +
                                                              metric(10) + R"({"file": "model.pt"})" + "\n");
  MlflowLogger logger(unreachable(dir.path()).resume(true));
  logger.log_metrics({{"loss", 5}}, 5);
  logger.start();
  logger.post_close();
  std::vector<int64_t> steps;
  std::vector<std::string> files;
  for (const auto& line : json_lines(dir.path() / "mlflow_unsent.jsonl")) {
    if (line.contains("metric")) steps.push_back(line["step"]);
    if (line.contains("file")) files.push_back(line["file"]);
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{3, 4, 10, 5}));
  EXPECT_EQ(files, (std::vector<std::string>{"model.pt"}));
  EXPECT_EQ(logger.unsent(), 5);
}

TEST(Mlflow, WithoutARunFolderWhatTheBufferCannotHoldIsCountedAsNotSent) {
  MlflowLogger logger(MlflowOptions().tracking_uri("http://127.0.0.1:1").flush_seconds(0.1).max_buffered(100));
  for (int64_t step = 1; step <= 150; ++step) logger.log_metrics({{"loss", 1.0}}, step);
  logger.start();
  logger.post_close();
  EXPECT_EQ(logger.unsent(), 150);
}

// A fake MLflow server: the run it makes has `artifact_uri`; log-batch answers `batch_status`
// with `batch_body`; artifacts PUT through its proxy are recorded as requests.
testing::ScriptedServer fake_mlflow(const std::string& artifact_uri, int batch_status = 200,
                                    const std::string& batch_body = "{}") {
  return testing::ScriptedServer([=](const testing::ScriptedServer::Request& r, testing::ScriptedServer::Reply& out) {
    if (r.target.find("experiments/get-by-name") != std::string::npos) {
      out.answer(200, R"({"experiment": {"experiment_id": "1"}})");
    } else if (r.target.find("runs/create") != std::string::npos) {
      out.answer(200,
                 nlohmann::json{
                     {"run", {{"info", {{"run_id", "r1"}, {"experiment_id", "1"}, {"artifact_uri", artifact_uri}}}}}}
                     .dump());
    } else if (r.target.find("runs/log-batch") != std::string::npos) {
      out.answer(batch_status, batch_body);
    } else {
      out.answer(200, "{}");
    }
  });
}

// A run folder holding model.pt, logged to `server` and closed; what the logger printed.
std::string run_against(const testing::ScriptedServer& server, const std::filesystem::path& folder,
                        const std::string& artifact_root = "", bool resume = false) {
  testing::write_file(folder / "model.pt", "weights");
  ::testing::internal::CaptureStderr();
  {
    MlflowLogger logger(MlflowOptions()
                            .tracking_uri(server.url())
                            .folder(folder.string())
                            .artifacts({"model.pt"})
                            .artifact_root(artifact_root)
                            .resume(resume)
                            .flush_seconds(5));
    logger.log_metrics({{"loss", 1.0}}, 1);
    logger.start();
    logger.post_close();
  }
  return ::testing::internal::GetCapturedStderr();
}

TEST(MlflowSecurity, AServersArtifactStoreIsWrittenOnlyInsideTheFolderTheRunsConfigurationNames) {
  const TempDir dir("mlflow-artifacts");
  std::filesystem::create_directories(dir / "root");
  std::filesystem::create_directories(dir / "run");
  const std::string root = (dir / "root").string(), outside = (dir / "outside").string();
  for (const std::string& uri : {"file://" + outside, "file://" + root + "/../outside", outside,
                                 "file://evil.example" + outside, "file:" + outside}) {
    for (const std::string& allowed : {std::string(), root}) {
      const auto server = fake_mlflow(uri);
      const std::string said = run_against(server, dir / "run", allowed);
      EXPECT_FALSE(std::filesystem::exists(dir / "outside")) << uri << " with artifact_root '" << allowed << "'";
      EXPECT_THAT(said, ::testing::HasSubstr("refused and left out")) << uri;
      EXPECT_THAT(said, ::testing::HasSubstr(uri.find("evil") != std::string::npos ? "another machine"
                                             : uri.find("..") != std::string::npos ? "'..'"
                                                                                   : "artifact_root"))
          << said;
    }
  }
  // Inside the folder the recipe names: written there.
  const auto server = fake_mlflow("file://" + root + "/1/r1/artifacts");
  EXPECT_EQ(run_against(server, dir / "run", root), "");
  EXPECT_EQ(testing::read_file(dir / "root/1/r1/artifacts/model.pt"), "weights");
  // Through the server's proxy: a path that climbs to another endpoint is never asked for.
  const auto proxy = fake_mlflow("mlflow-artifacts:/../../mlflow/runs/delete");
  EXPECT_THAT(run_against(proxy, dir / "run"), ::testing::HasSubstr("not a plain path"));
  for (const auto& r : proxy.requests()) EXPECT_EQ(r.method == "PUT", false) << r.target;
}

TEST(MlflowSecurity, AServersMessageReachesTheTerminalAsOneLineWithItsControlCharactersWrittenOut) {
  const TempDir dir("mlflow-ansi");
  const auto server = fake_mlflow(
      "mlflow-artifacts:/1/r1/artifacts", 400,
      nlohmann::json{{"error_code", "INVALID_PARAMETER_VALUE"}, {"message", "\x1b[2J\x1b[31mowned\nsecond line\r"}}
          .dump());
  const std::string said = run_against(server, dir.path());
  EXPECT_THAT(said, ::testing::HasSubstr("\\x1b[31mowned\\nsecond line\\r"));
  EXPECT_EQ(said.find('\x1b'), std::string::npos);
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
}

TEST(MlflowSecurity, AnUnsentFileEntryNamesOnlyAFileOfItsRunFolder) {
  const TempDir dir("mlflow-unsent");
  std::filesystem::create_directories(dir / "run");
  testing::write_file(dir / "secret", "do not send");
  testing::write_file(dir / "run/mlflow_unsent.jsonl",
                      "{\"tracking_uri\": \"x\"}\n{\"file\": \"../secret\"}\n{\"file\": \"" +
                          (dir / "secret").string() + "\"}\n{\"file\": \"model.pt\"}\n");
  const auto server = fake_mlflow("mlflow-artifacts:/1/r1/artifacts");
  const std::string said = run_against(server, dir / "run", "", true);
  EXPECT_THAT(said, ::testing::HasSubstr("file '../secret' is not a file of the run folder"));
  std::vector<std::string> sent;
  for (const auto& r : server.requests()) {
    if (r.method == "PUT") sent.push_back(r.target.substr(r.target.rfind('/') + 1) + "=" + r.body);
  }
  EXPECT_EQ(sent, (std::vector<std::string>{"model.pt=weights"}));
  EXPECT_FALSE(std::filesystem::exists(dir / "run/mlflow_unsent.jsonl"));  // all sent: the file goes
}

TEST(MlflowSecurity, AKilledSyncLosesNothingTheUnsentFileStaysUntilWhatReplacesItIsSafe) {
  const TempDir dir("mlflow-kill");
  const std::string unsent = "{\"tracking_uri\": \"http://127.0.0.1:1\"}\n" +
                             nlohmann::json{{"metric", "loss"}, {"value", 1}, {"step", 1}, {"timestamp", 1}}.dump() +
                             "\n";
  testing::write_file(dir / "mlflow_unsent.jsonl", unsent);
  {  // a sync that has read the file and not yet sent: then killed (never closed)
    MlflowLogger logger(unreachable(dir.path()).resume(true));
    EXPECT_EQ(testing::read_file(dir / "mlflow_unsent.jsonl"), unsent);
  }
  EXPECT_EQ(testing::read_file(dir / "mlflow_unsent.jsonl"), unsent);
}

}  // namespace
}  // namespace baton
