#include "baton/loggers/registry.h"

#include <filesystem>
#include <stdexcept>

#include "baton/core/registry.h"
#include "baton/io/run_dir.h"
#include "baton/loggers/csv_logger.h"
#include "baton/loggers/jsonl_logger.h"
#include "baton/loggers/mlflow_logger.h"
#include "baton/loggers/tensorboard_logger.h"

namespace baton {
namespace {

// Each entry reads its options; with a context it also makes the logger (without: a check only).
using RunLoggers = Registry<std::shared_ptr<LoggerDestination>, OptionReader&, const RunLoggerContext*>;

// The files MLflow receives at a run's end.
std::vector<std::string> mlflow_artifacts() {
  return {RunDir::kRecipe, RunDir::kModel, RunDir::kMetricsJsonl, RunDir::kSummary};
}

std::shared_ptr<LoggerDestination> make_mlflow(OptionReader& r, const RunLoggerContext* c) {
  MlflowOptions o;
  read_mlflow_options(r, o);
  if (c == nullptr) return nullptr;
  if (o.run_name().empty()) o.run_name(c->run_name);
  o.source(c->source).folder(c->folder).resume(c->resume).parent_run_id(c->parent_run_id);
  return std::make_shared<MlflowLogger>(o.artifacts(mlflow_artifacts()));
}

const RunLoggers& run_loggers() {
  static const RunLoggers table(
      "logger", RunLoggers::Order::kSorted,
      {
          {"csv",
           [](OptionReader& r, const RunLoggerContext* c) -> std::shared_ptr<LoggerDestination> {
             r.finish();
             if (c == nullptr) return nullptr;
             return std::make_shared<CsvLogger>(RunDir(c->folder).metrics_csv().string(), c->resume);
           }},
          {"jsonl",
           [](OptionReader& r, const RunLoggerContext* c) -> std::shared_ptr<LoggerDestination> {
             r.finish();
             if (c == nullptr) return nullptr;
             return std::make_shared<JsonlLogger>(RunDir(c->folder).metrics_jsonl().string(), c->resume);
           }},
          {"mlflow", make_mlflow},
          {"tensorboard",
           [](OptionReader& r, const RunLoggerContext* c) -> std::shared_ptr<LoggerDestination> {
             r.finish();
             if (c == nullptr) return nullptr;
             return std::make_shared<TensorBoardLogger>(RunDir(c->folder).tensorboard().string());
           }},
      });
  return table;
}

}  // namespace

std::vector<std::string> run_logger_names() { return run_loggers().names(); }

void check_run_logger(const std::string& name, OptionReader& options) { run_loggers().make(name, options, nullptr); }

std::shared_ptr<LoggerDestination> make_run_logger(const std::string& name, const RunLoggerContext& context,
                                                   const nlohmann::json& options) {
  OptionReader reader("loggers." + name, options);
  return run_loggers().make(name, reader, &context);
}

}  // namespace baton
