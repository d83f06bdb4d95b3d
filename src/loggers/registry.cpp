#include "baton/loggers/registry.h"

#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>

#include "baton/core/options.h"
#include "baton/io/run_dir.h"
#include "baton/loggers/csv_logger.h"
#include "baton/loggers/jsonl_logger.h"
#include "baton/loggers/tensorboard_logger.h"

namespace baton {
namespace {

using RunLoggerFactory = std::function<std::shared_ptr<LoggerDestination>(const std::filesystem::path&, bool)>;

const std::map<std::string, RunLoggerFactory>& run_loggers() {
  static const std::map<std::string, RunLoggerFactory> table = {
      {"csv", [](const std::filesystem::path& dir,
                 bool resume) { return std::make_shared<CsvLogger>(RunDir(dir).metrics_csv().string(), resume); }},
      {"jsonl",
       [](const std::filesystem::path& dir, bool resume) {
         return std::make_shared<JsonlLogger>(RunDir(dir).metrics_jsonl().string(), resume);
       }},
      {"tensorboard", [](const std::filesystem::path& dir,
                         bool) { return std::make_shared<TensorBoardLogger>(RunDir(dir).tensorboard().string()); }},
  };
  return table;
}

}  // namespace

std::vector<std::string> run_logger_names() {
  std::vector<std::string> names;
  for (const auto& entry : run_loggers()) names.push_back(entry.first);
  return names;
}

std::shared_ptr<LoggerDestination> make_run_logger(const std::string& name, const std::string& folder, bool resume) {
  const auto it = run_loggers().find(name);
  if (it == run_loggers().end()) throw std::invalid_argument(unknown_name("logger", name, run_logger_names()));
  return it->second(folder, resume);
}

}  // namespace baton
