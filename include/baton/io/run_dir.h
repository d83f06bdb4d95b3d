// RunDir: the layout of a run's folder, in one place. `baton train` writes it, `baton search`
// writes a search's, and `baton plot`, the dashboard and the loggers read or write its files by
// these names, never by spelling them.
//
//   baton::RunDir run("runs/exp1");
//   run.metrics_jsonl();                 // runs/exp1/metrics.jsonl
//   for (const auto& name : baton::RunDir::run_files()) ...   // what --overwrite moves aside
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace baton {

class RunDir {
 public:
  static constexpr const char* kRecipe = "recipe.yaml";                // the resolved recipe, once the run is accepted
  static constexpr const char* kMetricsJsonl = "metrics.jsonl";        // every logged value, a line per step
  static constexpr const char* kMetricsCsv = "metrics.csv";            // the same, a row per step
  static constexpr const char* kSummary = "summary.json";              // what the run (or the search) came to
  static constexpr const char* kModel = "model.pt";                    // the trained weights
  static constexpr const char* kCheckpoints = "checkpoints";           // the checkpoint folder, with `latest`
  static constexpr const char* kTensorBoard = "tensorboard";           // TensorBoard's event files
  static constexpr const char* kTraces = "traces";                     // Chrome traces of the profiler
  static constexpr const char* kLock = ".lock";                        // held by the one `baton train` running here
  static constexpr const char* kSearchDb = "search.db";                // a search's SQLite storage
  static constexpr const char* kClasses = "classes.txt";               // the class names, a line each (image folders)
  static constexpr const char* kMlflow = "mlflow.json";                // the MLflow run this run logs to
  static constexpr const char* kMlflowUnsent = "mlflow_unsent.jsonl";  // what MLflow never received
  static constexpr const char* kMlflowPending = "mlflow_pending.jsonl";  // what it has not received yet

  explicit RunDir(std::filesystem::path folder) : folder_(std::move(folder)) {}

  const std::filesystem::path& path() const { return folder_; }
  std::filesystem::path recipe() const { return folder_ / kRecipe; }
  std::filesystem::path metrics_jsonl() const { return folder_ / kMetricsJsonl; }
  std::filesystem::path metrics_csv() const { return folder_ / kMetricsCsv; }
  std::filesystem::path summary() const { return folder_ / kSummary; }
  std::filesystem::path model() const { return folder_ / kModel; }
  std::filesystem::path checkpoints() const { return folder_ / kCheckpoints; }
  std::filesystem::path tensorboard() const { return folder_ / kTensorBoard; }
  std::filesystem::path traces() const { return folder_ / kTraces; }
  std::filesystem::path lock() const { return folder_ / kLock; }
  std::filesystem::path search_db() const { return folder_ / kSearchDb; }
  std::filesystem::path classes() const { return folder_ / kClasses; }
  std::filesystem::path mlflow() const { return folder_ / kMlflow; }
  std::filesystem::path mlflow_unsent() const { return folder_ / kMlflowUnsent; }
  std::filesystem::path mlflow_pending() const { return folder_ / kMlflowPending; }

  // What a training run writes here (the lock aside): what makes a folder hold a run, and what
  // `baton train --overwrite` moves aside.
  static const std::vector<std::string>& run_files() {
    static const std::vector<std::string> files = {kRecipe,  kMetricsJsonl, kMetricsCsv,   kSummary,
                                                   kModel,   kCheckpoints,  kTensorBoard,  kTraces,
                                                   kClasses, kMlflow,       kMlflowUnsent, kMlflowPending};
    return files;
  }

 private:
  std::filesystem::path folder_;
};

}  // namespace baton
