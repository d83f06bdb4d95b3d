#include "baton/loggers/registry.h"

#include <filesystem>
#include <stdexcept>

#include "baton/core/registry.h"
#include "baton/io/run_dir.h"
#include "baton/loggers/csv_logger.h"
#include "baton/loggers/jsonl_logger.h"
#include "baton/loggers/tensorboard_logger.h"

namespace baton {
namespace {

using RunLoggers = Registry<std::shared_ptr<LoggerDestination>, const std::filesystem::path&, bool>;

const RunLoggers& run_loggers() {
  static const RunLoggers table(
      "logger", RunLoggers::Order::kSorted,
      {
          {"csv", [](const std::filesystem::path& dir,
                     bool resume) { return std::make_shared<CsvLogger>(RunDir(dir).metrics_csv().string(), resume); }},
          {"jsonl",
           [](const std::filesystem::path& dir, bool resume) {
             return std::make_shared<JsonlLogger>(RunDir(dir).metrics_jsonl().string(), resume);
           }},
          {"tensorboard", [](const std::filesystem::path& dir,
                             bool) { return std::make_shared<TensorBoardLogger>(RunDir(dir).tensorboard().string()); }},
      });
  return table;
}

}  // namespace

std::vector<std::string> run_logger_names() { return run_loggers().names(); }

std::shared_ptr<LoggerDestination> make_run_logger(const std::string& name, const std::string& folder, bool resume) {
  return run_loggers().make(name, folder, resume);
}

}  // namespace baton
