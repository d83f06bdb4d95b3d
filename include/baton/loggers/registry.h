// The loggers a recipe names (`loggers: {jsonl: , csv: , tensorboard: }`), each writing into a run's
// folder: registered once, in src/loggers/registry.cpp.
//
//   for (const auto& name : run.loggers) loggers.push_back(baton::make_run_logger(name, dir, resume));
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "baton/core/logger.h"

namespace baton {

// The names, sorted: csv, jsonl, tensorboard.
std::vector<std::string> run_logger_names();
// `name`'s logger writing into `folder` (metrics.csv, metrics.jsonl, tensorboard/); `resume` goes on
// from what is there. std::invalid_argument "unknown logger 'x' (known: ...)" for another name.
std::shared_ptr<LoggerDestination> make_run_logger(const std::string& name, const std::string& folder, bool resume);

}  // namespace baton
