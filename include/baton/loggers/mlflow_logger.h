// MlflowLogger: a run on an MLflow tracking server, through its REST API (/api/2.0/mlflow/...): the
// hyperparameters (the resolved recipe) as params, every metric at its step, tags (baton's version,
// the recipe folder's git commit, the host, a note), and files at the end (recipe.yaml, model.pt,
// metrics.jsonl, summary.json) through the server's artifact proxy.
//
//   loggers: {mlflow: {tracking_uri: http://127.0.0.1:5000, experiment: fashion}}
//
// It never makes training wait and never fails it: log_metrics() appends each entry to
// FOLDER/mlflow_pending.jsonl (so a kill -9 loses none) and to a bounded buffer in memory; one thread
// of its own sends batches, retrying a server that is down, slow or restarting with back-off (0.5 s
// doubling to 30 s), and reads back from the file what the buffer could not hold. mlflow.json keeps
// the run's id and how far the server has the file, so a resumed run continues its MLflow run and
// sends the rest. At close it keeps trying for flush_seconds, then writes what is still unsent to
// FOLDER/mlflow_unsent.jsonl and says so in one line; a resumed run, or `baton mlflow sync FOLDER`,
// sends it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/logger.h"
#include "baton/core/options.h"

namespace baton {

using MlflowTags = std::map<std::string, std::string>;

struct MlflowOptions {
  BATON_ARG(std::string, tracking_uri);            // http:// or https://, the server's root
  BATON_ARG(std::string, experiment) = "Default";  // made when it does not exist
  BATON_ARG(std::string, run_name);                // mlflow.runName (default: MLflow's)
  BATON_ARG(MlflowTags, tags);                     // more tags, as given
  BATON_ARG(std::string, parent_run_id);           // a child run of this run (a search's trial)
  BATON_ARG(std::string, source);                  // the recipe: mlflow.source.name and its git commit
  BATON_ARG(std::string, folder);                  // the run folder: mlflow.json, pending and unsent files
  BATON_ARG(std::vector<std::string>, artifacts);  // files in `folder` uploaded at close (when there)
  BATON_ARG(bool, resume) = false;                 // continue FOLDER/mlflow.json's run, send the unsent
  BATON_ARG(int64_t, max_buffered) = 100000;       // entries in memory (at least 100); more wait on disk
  BATON_ARG(double, flush_seconds) = 10;           // at close: how long a server that is down is awaited
  BATON_ARG(double, request_seconds) = 10;         // one request's limit
  // A folder (absolute) where a server whose run's artifact store is a local `file:` folder may
  // have the files written: only inside it. Default: none (only the server's proxy,
  // mlflow-artifacts:, is written through).
  BATON_ARG(std::string, artifact_root);
};

// Reads a recipe's `loggers: {mlflow: {...}}` (tracking_uri, experiment, run_name, tags,
// flush_seconds, max_buffered, artifact_root) into `options`; refuses a missing or non-HTTP
// tracking_uri.
void read_mlflow_options(OptionReader& reader, MlflowOptions& options);

// The answer of a request the server refused or never gave.
class MlflowError : public std::runtime_error {
 public:
  MlflowError(const std::string& what, bool passing, std::string code = {})
      : std::runtime_error(what), passing_(passing), code_(std::move(code)) {}
  bool passing() const { return passing_; }          // may work later (no answer, 5xx)
  const std::string& code() const { return code_; }  // MLflow's error_code ("RESOURCE_DOES_NOT_EXIST")

 private:
  bool passing_;
  std::string code_;
};

// MLflow's REST calls, one attempt each (the caller retries); MLFLOW_TRACKING_TOKEN or
// MLFLOW_TRACKING_USERNAME / _PASSWORD from the environment authenticate, as MLflow's own client.
class MlflowClient {
 public:
  ~MlflowClient();
  explicit MlflowClient(std::string tracking_uri, double request_seconds = 10);

  struct RunInfo {
    std::string run_id;
    std::string experiment_id;
    std::string artifact_uri;
  };
  // The experiment's id, made when there is none.
  std::string experiment_id(const std::string& name) const;
  RunInfo create_run(const std::string& experiment_id, const std::string& run_name, const MlflowTags& tags) const;
  RunInfo get_run(const std::string& run_id) const;
  // At most 1000 entries, 100 of them params and 100 tags (MLflow's limits).
  void log_batch(const std::string& run_id, const nlohmann::json& metrics, const nlohmann::json& params,
                 const nlohmann::json& tags) const;
  // status: RUNNING, FINISHED, FAILED or KILLED.
  void update_run(const std::string& run_id, const std::string& status) const;
  // `bytes` as the run's artifact `name` (mlflow-artifacts:/ through the server; file:/ written).
  void upload_artifact(const RunInfo& run, const std::string& name, const std::string& bytes) const;
  void set_request_seconds(double seconds);
  // A server's `file:` artifact store is written only inside this folder (none: never).
  void set_artifact_root(std::string folder);
  // A request in flight ends (as "given up") once `*cancel` turns true.
  void set_cancel(const std::atomic<bool>* cancel);

  nlohmann::json call(const std::string& method, const std::string& endpoint, const nlohmann::json& body) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The resolved recipe as MLflow params: nested keys dotted ("optimizer.lr"), lists and values as
// JSON text (a string as written), values cut to MLflow's 6000 characters.
std::vector<std::pair<std::string, std::string>> mlflow_params(const nlohmann::json& hyperparameters);

// The commit of the git work tree holding `path` (its HEAD, read from .git), or "" when none.
std::string git_commit_of(const std::string& path);

class MlflowLogger : public LoggerDestination {
 public:
  // Nothing here waits for the server, or sends: sending starts with start() (the Trainer's first
  // batch; without a Trainer, call it), and post_close() of a logger never started does nothing. A logger destroyed
  // before it started (a run that failed before it trained: a checkpoint that cannot be read) sends nothing and leaves
  // no file of a new run behind.
  explicit MlflowLogger(MlflowOptions options);
  ~MlflowLogger() override;
  void start();
  void batch_start(State& state, Logger& logger) override;

  void log_metrics(const Metrics& metrics, int64_t step) override;
  void log_hyperparameters(const nlohmann::json& hyperparameters) override;
  void log_tag(const std::string& key, const std::string& value);
  // The run's end as MLflow shows it: FINISHED (the default), KILLED (a signal), FAILED.
  void set_end_status(const std::string& status);
  // After everything else closed (metrics.jsonl complete): the files, the run's end, a wait of at
  // most flush_seconds; what is still unsent goes to FOLDER/mlflow_unsent.jsonl with one line on
  // stderr. Idempotent; the destructor does it (as FAILED) when nothing did.
  void post_close() override;

  // The MLflow run's id ("" until the server made it).
  std::string run_id() const;
  // The run's id once the server made it, waiting at most `seconds` ("" then).
  std::string wait_for_run(double seconds);
  // After post_close: entries and files not sent (0: all reached the server).
  int64_t unsent() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
