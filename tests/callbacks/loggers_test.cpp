#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/core/algorithm.h"
#include "baton/core/engine.h"
#include "baton/core/state.h"
#include "baton/loggers/csv_logger.h"
#include "baton/loggers/in_memory_logger.h"
#include "baton/loggers/jsonl_logger.h"
#include "baton/loggers/mlflow_logger.h"
#include "baton/loggers/plot.h"
#include "baton/loggers/registry.h"
#include "baton/loggers/tensorboard_logger.h"
#include "common/scripted_server.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::TempDir;

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(tensorboard::crc32c("123456789"), 0xE3069283U);
  EXPECT_EQ(tensorboard::crc32c(std::string(32, '\0')), 0x8A9136AAU);
  EXPECT_EQ(tensorboard::crc32c(std::string(32, '\xff')), 0x62A8AB43U);
  EXPECT_EQ(tensorboard::crc32c(""), 0U);
}

// A minimal protobuf reader: field number -> raw value (varint as number, others as bytes).
struct Field {
  int number;
  int wire;
  uint64_t varint = 0;
  std::string bytes;
};
std::vector<Field> parse(std::string_view data) {
  std::vector<Field> out;
  std::size_t i = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0; i < data.size(); shift += 7) {
      const auto b = static_cast<unsigned char>(data[i++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  };
  while (i < data.size()) {
    const uint64_t key = varint();
    Field f{static_cast<int>(key >> 3), static_cast<int>(key & 7), 0, {}};
    if (f.wire == 0) f.varint = varint();
    if (f.wire == 1) f.bytes = std::string(data.substr(i, 8)), i += 8;
    if (f.wire == 5) f.bytes = std::string(data.substr(i, 4)), i += 4;
    if (f.wire == 2) {
      const auto n = static_cast<std::size_t>(varint());
      f.bytes = std::string(data.substr(i, n));
      i += n;
    }
    out.push_back(f);
  }
  return out;
}
const Field* find(const std::vector<Field>& fields, int number) {
  for (const auto& f : fields) {
    if (f.number == number) return &f;
  }
  return nullptr;
}

TEST(TensorBoardLogger, WritesTFRecordsThatReadBack) {
  const TempDir dir("loggers");
  std::string path;
  {
    TensorBoardLogger tb((dir.path() / "tensorboard").string());
    path = tb.path();
    tb.log_metrics({{"train/loss", 0.5}, {"eval/accuracy", 0.875}}, 3);
    tb.log_hyperparameters({{"lr", 0.1}});
    State state;
    Logger logger(state);
    tb.close(state, logger);
  }
  EXPECT_THAT(std::filesystem::path(path).filename().string(), ::testing::StartsWith("events.out.tfevents."));
  const std::string file = testing::read_file(path);
  std::vector<std::string> events;
  std::size_t i = 0;
  while (i < file.size()) {
    ASSERT_GE(file.size() - i, 12U);
    uint64_t length = 0;
    uint32_t length_crc = 0;
    std::memcpy(&length, file.data() + i, 8);
    std::memcpy(&length_crc, file.data() + i + 8, 4);
    EXPECT_EQ(length_crc, tensorboard::masked_crc32c(std::string_view(file.data() + i, 8)));
    const std::string_view data(file.data() + i + 12, length);
    uint32_t data_crc = 0;
    std::memcpy(&data_crc, file.data() + i + 12 + length, 4);
    EXPECT_EQ(data_crc, tensorboard::masked_crc32c(data));
    events.emplace_back(data);
    i += 12 + length + 4;
  }
  ASSERT_EQ(events.size(), 4U);  // version, 2 scalars, hyperparameters
  EXPECT_EQ(find(parse(events[0]), 3)->bytes, "brain.Event:2");
  std::map<std::string, float> scalars;
  for (int e = 1; e <= 2; ++e) {
    const auto event = parse(events[static_cast<std::size_t>(e)]);
    EXPECT_EQ(find(event, 2)->varint, 3U);  // step
    const auto value = parse(find(parse(find(event, 5)->bytes), 1)->bytes);
    float v = 0;
    std::memcpy(&v, find(value, 2)->bytes.data(), 4);
    scalars[find(value, 1)->bytes] = v;
  }
  EXPECT_FLOAT_EQ(scalars["train/loss"], 0.5F);
  EXPECT_FLOAT_EQ(scalars["eval/accuracy"], 0.875F);
  const auto text = parse(find(parse(find(parse(events[3]), 5)->bytes), 1)->bytes);
  EXPECT_EQ(find(text, 1)->bytes, "hyperparameters");
  EXPECT_THAT(find(parse(find(text, 8)->bytes), 8)->bytes, ::testing::HasSubstr("\"lr\": 0.1"));
}

TEST(TensorBoardLogger, TwoLoggersInOneSecondWriteTwoFiles) {
  const TempDir dir("loggers");
  TensorBoardLogger a((dir.path() / "tb").string());
  TensorBoardLogger b((dir.path() / "tb").string());
  EXPECT_NE(a.path(), b.path());
  EXPECT_EQ(
      std::distance(std::filesystem::directory_iterator(dir.path() / "tb"), std::filesystem::directory_iterator()), 2);
}

TEST(CsvLogger, OneRowPerStepColumnsGrowAsMetricsAppear) {
  const TempDir dir("loggers");
  const auto path = dir.path() / "metrics.csv";
  CsvLogger csv(path.string());
  State state;
  Logger logger(state);
  csv.log_metrics({{"train/loss", 2.5}}, 1);
  csv.log_metrics({{"train/loss", 2.0}}, 2);
  csv.log_metrics({{"eval/accuracy", 0.5}}, 2);  // same step: same row
  csv.log_metrics({{"train/loss", 1.5}}, 3);
  csv.close(state, logger);
  std::istringstream lines(testing::read_file(path));
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::stringstream cell_stream(line);
    for (std::string cell; std::getline(cell_stream, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), 4U);
  EXPECT_THAT(rows[0], ::testing::ElementsAre("step", "time", "train/loss", "eval/accuracy"));
  EXPECT_EQ(rows[1][0], "1");
  EXPECT_EQ(rows[1][2], "2.5");
  EXPECT_EQ(rows[1][3], "");
  EXPECT_EQ(rows[2][2], "2");
  EXPECT_EQ(rows[2][3], "0.5");
  EXPECT_EQ(rows[3][0], "3");
  EXPECT_EQ(rows[3][2], "1.5");
}

// A state whose timestamp is at `batch`, as after a resume from a checkpoint of that batch.
void move_to_batch(State& state, int64_t batch) {
  for (int64_t b = 0; b < batch; ++b) state.timestamp = state.timestamp.to_next_batch(16, 0, 0.01);
}

// The steps of a metrics.jsonl's train/loss lines, in order.
std::vector<int64_t> loss_steps(const std::filesystem::path& path) {
  std::vector<int64_t> steps;
  std::istringstream lines(testing::read_file(path));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("train/loss")) steps.push_back(j["step"].get<int64_t>());
  }
  return steps;
}

TEST(JsonlLogger, AResumedRunKeepsTheLinesUpToItsBatchAndAppendsAfterThem) {
  const TempDir dir("loggers");
  const auto path = dir.path() / "metrics.jsonl";
  State state;
  Logger logger(state);
  {
    JsonlLogger first(path.string());
    first.log_hyperparameters({{"lr", 0.1}});
    for (int64_t step = 1; step <= 10; ++step) first.log_metrics({{"train/loss", 1.0 / step}}, step);
    first.close(state, logger);
  }
  std::ofstream(path, std::ios::app) << R"({"step": 11, "train/lo)";  // a kill mid-line
  // Resumed from the checkpoint of batch 6: batches 7-10 are trained again, and logged once.
  JsonlLogger resumed(path.string(), /*resume=*/true);
  resumed.log_hyperparameters({{"lr", 0.1}});
  move_to_batch(state, 6);
  resumed.after_load(state, logger);
  for (int64_t step = 7; step <= 9; ++step) resumed.log_metrics({{"train/loss", 0.5}}, step);
  resumed.close(state, logger);
  EXPECT_EQ(loss_steps(path), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  const std::string text = testing::read_file(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 11);  // and both hyperparameters lines
  // A run that starts afresh (nothing resumed) starts the file afresh.
  JsonlLogger fresh(path.string(), /*resume=*/true);
  State start;
  fresh.after_load(start, logger);
  fresh.log_metrics({{"train/loss", 2.0}}, 1);
  fresh.close(start, logger);
  EXPECT_EQ(loss_steps(path), (std::vector<int64_t>{1}));
}

// Composer hands algorithm traces to its loggers; baton's file and in-memory loggers record them.
TEST(JsonlLogger, WritesHowOftenEachAlgorithmRanAtEachEpochEnd) {
  struct OnBeforeLoss : Algorithm {
    std::string name() const override { return "Halve"; }
    bool match(Event e, const State&) override { return e == Event::kBeforeLoss; }
    std::optional<int> apply(Event, State&, Logger&) override { return std::nullopt; }
  };
  const TempDir dir("loggers");
  const auto path = dir.path() / "traces.jsonl";
  State state;
  state.algorithms.push_back(std::make_shared<OnBeforeLoss>());
  auto jsonl = std::make_shared<JsonlLogger>(path.string());
  auto memory = std::make_shared<InMemoryLogger>();
  Logger logger(state, {jsonl, memory});
  Engine engine(state, logger);
  for (int i = 0; i < 3; ++i) engine.run_event(Event::kBeforeLoss);
  engine.run_event(Event::kAfterLoss);  // nothing runs there
  move_to_batch(state, 3);
  jsonl->epoch_end(state, logger);
  jsonl->epoch_end(state, logger);  // nothing ran since: no second line
  engine.run_event(Event::kBeforeLoss);
  move_to_batch(state, 1);  // batch 4
  jsonl->close(state, logger);
  EXPECT_EQ(memory->trace_runs(), (std::map<std::string, int64_t>{{"Halve/before_loss", 4}}));
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["step"], 3);
  EXPECT_EQ(lines[0]["traces"], (nlohmann::json{{"Halve/before_loss", 3}}));
  EXPECT_EQ(lines[1]["step"], 4);
  EXPECT_EQ(lines[1]["traces"], (nlohmann::json{{"Halve/before_loss", 1}}));
}

TEST(CsvLogger, AResumedRunKeepsTheRowsUpToItsBatch) {
  const TempDir dir("loggers");
  const auto path = dir.path() / "metrics.csv";
  State state;
  Logger logger(state);
  {
    CsvLogger first(path.string());
    for (int64_t step = 1; step <= 5; ++step) first.log_metrics({{"train/loss", 1.0 / step}}, step);
    first.log_metrics({{"eval/accuracy", 0.75}}, 5);
    first.close(state, logger);
  }
  std::ofstream(path, std::ios::app) << "6,17000";  // a kill mid-row
  CsvLogger resumed(path.string(), /*resume=*/true);
  move_to_batch(state, 3);
  resumed.after_load(state, logger);
  resumed.log_metrics({{"train/loss", 0.2}}, 4);
  resumed.log_metrics({{"eval/accuracy", 0.8}}, 4);
  resumed.close(state, logger);
  std::istringstream lines(testing::read_file(path));
  std::vector<std::string> steps;
  for (std::string line; std::getline(lines, line);) steps.push_back(line.substr(0, line.find(',')));
  EXPECT_EQ(steps, (std::vector<std::string>{"step", "1", "2", "3", "4"}));
  EXPECT_THAT(testing::read_file(path), ::testing::HasSubstr("step,time,train/loss,eval/accuracy\n"));
  EXPECT_THAT(testing::read_file(path), ::testing::HasSubstr(",0.2,0.8\n"));
}

// Tags balance (every <a> closed by </a> or self-closed), and attribute values are quoted.
bool well_formed(const std::string& xml) {
  std::vector<std::string> open;
  std::size_t i = 0;
  while ((i = xml.find('<', i)) != std::string::npos) {
    const std::size_t end = xml.find('>', i);
    if (end == std::string::npos) return false;
    const std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return false;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return false;
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
  }
  return open.empty();
}

TEST(RunLoggers, EachNameWritesItsFileInTheRunFolderAndAnUnknownNameSaysTheKnownOnes) {
  EXPECT_EQ(run_logger_names(), (std::vector<std::string>{"csv", "jsonl", "mlflow", "tensorboard"}));
  const TempDir dir("loggers");
  State state;
  Logger logger(state);
  for (const std::string name : {"csv", "jsonl", "tensorboard"}) {
    auto destination = make_run_logger(name, RunLoggerContext{.folder = dir.path().string()});
    destination->log_metrics({{"train/loss", 1.5}}, 1);
    destination->close(state, logger);
  }
  EXPECT_THAT(testing::read_file(dir.path() / "metrics.jsonl"), ::testing::HasSubstr("train/loss"));
  EXPECT_THAT(testing::read_file(dir.path() / "metrics.csv"), ::testing::HasSubstr("train/loss"));
  EXPECT_FALSE(std::filesystem::is_empty(dir.path() / "tensorboard"));
  EXPECT_THAT([&] { make_run_logger("xml", RunLoggerContext{.folder = dir.path().string()}); },
              ::testing::ThrowsMessage<std::invalid_argument>(
                  ::testing::StrEq("unknown logger 'xml' (known: csv, jsonl, mlflow, tensorboard)")));
}

TEST(RunLoggers, OptionsAreCheckedWhenTheRecipeIsReadAndAFileLoggerTakesNone) {
  const auto check = [](const std::string& name, const nlohmann::json& options) {
    OptionReader reader("loggers." + name, options);
    check_run_logger(name, reader);
  };
  EXPECT_NO_THROW(check("mlflow", {{"tracking_uri", "http://127.0.0.1:5000"}, {"experiment", "fashion"}}));
  EXPECT_THAT(
      [&] {
        check("mlflow", {{"experiment", "fashion"}});
      },
      ::testing::ThrowsMessage<OptionError>(::testing::HasSubstr("tracking_uri is required")));
  EXPECT_THAT(
      [&] {
        check("mlflow", {{"tracking_uri", "127.0.0.1:5000"}});
      },
      ::testing::ThrowsMessage<OptionError>(::testing::HasSubstr("http:// or https://")));
  EXPECT_THAT(
      [&] {
        check("mlflow", {{"tracking_uri", "http://h"}, {"experimnt", "x"}});
      },
      ::testing::ThrowsMessage<OptionError>(::testing::HasSubstr("experimnt")));
  EXPECT_THAT(
      [&] {
        check("jsonl", {{"path", "x"}});
      },
      ::testing::ThrowsMessage<OptionError>(::testing::HasSubstr("unknown option")));
}

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
  std::filesystem::remove_all(dir.path() / ".git");
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

TEST(Plot, AnSvgWithOnePathPerRunAxesAndALegend) {
  const std::string svg = line_chart_svg(
      {{"run <a>", {{0, 0.5}, {100, 0.8}, {200, 0.9}}}, {"run-b", {{0, 0.4}, {100, std::nan("")}, {200, 0.85}}}},
      ChartOptions().title("eval/accuracy"));
  EXPECT_TRUE(well_formed(svg));
  std::size_t paths = 0;
  for (std::size_t i = 0; (i = svg.find("<path class=\"series\"", i)) != std::string::npos; ++i) ++paths;
  EXPECT_EQ(paths, 2U);
  EXPECT_THAT(svg, ::testing::HasSubstr("run &lt;a&gt;"));  // escaped
  EXPECT_THAT(svg, ::testing::HasSubstr(">eval/accuracy</text>"));
  EXPECT_THAT(svg, ::testing::HasSubstr(">100</text>"));  // an x tick
  EXPECT_THAT(nice_ticks(0, 1), ::testing::ElementsAre(0, 0.2, 0.4, 0.6000000000000001, 0.8, 1));
  EXPECT_THAT(nice_ticks(3, 1404), ::testing::ElementsAre(500, 1000));
}

}  // namespace
}  // namespace baton
