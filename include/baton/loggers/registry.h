// The loggers a recipe names (`loggers: {jsonl: , csv: , tensorboard: , mlflow: {tracking_uri: ...}}`),
// each writing into a run's folder or sending its run: registered once, in src/loggers/registry.cpp.
//
//   baton::check_run_logger(name, options);   // when the recipe is read: a bad option fails there
//   loggers.push_back(baton::make_run_logger(name, {.folder = dir, .resume = resume}, options.json()));
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/logger.h"
#include "baton/core/options.h"

namespace baton {

// What a run logger knows of its run.
struct RunLoggerContext {
  std::string folder = {};         // the run folder (metrics.csv, metrics.jsonl, tensorboard/, mlflow.json)
  bool resume = false;             // baton train --autoresume: go on from what is there
  std::string run_name = {};       // the run's name (MLflow's run name)
  std::string source = {};         // the recipe file (MLflow's source and the git commit of its folder)
  std::string parent_run_id = {};  // a search's MLflow run: this run is its child
};

// The names, sorted: csv, jsonl, mlflow, tensorboard.
std::vector<std::string> run_logger_names();
// Reads `name`'s options as a recipe gives them; throws std::invalid_argument "unknown logger 'x'
// (known: ...)" for another name, the reader's error for a bad option.
void check_run_logger(const std::string& name, OptionReader& options);
// `name`'s logger for the run in `context`, with options check_run_logger accepted.
std::shared_ptr<LoggerDestination> make_run_logger(const std::string& name, const RunLoggerContext& context,
                                                   const nlohmann::json& options = nlohmann::json());

}  // namespace baton
