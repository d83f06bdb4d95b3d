// baton mlflow sync RUN_DIR: sends to MLflow what a run's logger could not (RUN_DIR/mlflow_unsent.jsonl,
// written when the server stayed away past the run's end) into the same MLflow run.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "baton/core/options.h"
#include "baton/io/file.h"
#include "baton/io/run_dir.h"
#include "baton/io/text.h"
#include "baton/io/url.h"
#include "baton/loggers/mlflow_logger.h"
#include "commands.h"

namespace baton::cli {
namespace {

struct SyncArgs {
  std::string run_dir;
  std::string tracking_uri;
  double wait = 60;
};

int run_sync(const SyncArgs& args) {
  const RunDir dir(args.run_dir);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir.path(), ec)) throw FileError(args.run_dir + ": no such run folder");
  if (!std::filesystem::exists(dir.mlflow_unsent(), ec)) {
    if (!std::filesystem::exists(dir.mlflow(), ec)) {
      throw FileError(args.run_dir + ": not the folder of a run that logged to MLflow (no " +
                      std::string(RunDir::kMlflow) + ", no " + RunDir::kMlflowUnsent + ")");
    }
    std::printf("%s: nothing to send (no %s)\n", args.run_dir.c_str(), RunDir::kMlflowUnsent);
    return 0;
  }
  const std::string text =
      read_file(dir.mlflow_unsent().string(), {.what = "the unsent MLflow entries", .max_bytes = 1ull << 32});
  const auto header = nlohmann::json::parse(text.substr(0, text.find('\n')), nullptr, false);
  if (!header.is_object() || !header.contains("tracking_uri") || !header["tracking_uri"].is_string()) {
    throw FileError(dir.mlflow_unsent().string() + ":1: not the header of baton's unsent MLflow entries");
  }
  MlflowOptions o;
  o.tracking_uri(args.tracking_uri.empty() ? header["tracking_uri"].get<std::string>() : args.tracking_uri);
  if (!is_url(o.tracking_uri()) || one_line(o.tracking_uri()) != o.tracking_uri()) {
    throw FileError(dir.mlflow_unsent().string() + ": tracking_uri '" + one_line(o.tracking_uri(), 100) +
                    "' is not http:// or https:// (give one with --tracking-uri)");
  }
  o.experiment(header.value("experiment", std::string("Default")))
      .run_name(header.value("run_name", std::string()))
      .parent_run_id(header.value("parent_run_id", std::string()))
      .source(header.value("source", std::string()))
      .folder(args.run_dir)
      .resume(true)
      .flush_seconds(args.wait);
  MlflowLogger logger(o);
  logger.start();
  logger.post_close();
  if (logger.unsent() > 0) return kRunFailed;  // the logger said what and why
  std::printf("%s: sent to %s, run %s\n", args.run_dir.c_str(), o.tracking_uri().c_str(),
              one_line(logger.run_id(), 100).c_str());  // the server's words: one line
  return 0;
}

}  // namespace

void add_mlflow(CLI::App& app) {
  auto args = std::make_shared<SyncArgs>();
  CLI::App* cmd = app.add_subcommand("mlflow", "MLflow: send what a run could not");
  cmd->require_subcommand(1);
  CLI::App* sync = cmd->add_subcommand("sync", "send RUN_DIR/mlflow_unsent.jsonl to the run's MLflow run");
  sync->add_option("run_dir", args->run_dir, "the run folder")->required();
  sync->add_option("--tracking-uri", args->tracking_uri, "another server than the one the run had");
  sync->add_option("--wait", args->wait, "seconds to keep trying a server that does not answer (default 60)")
      ->check(finite_between(0, 3600));
  sync->callback([args] {
    if (const int code = run_sync(*args); code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace baton::cli
