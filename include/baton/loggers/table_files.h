// TableFiles: each table metric as a CSV file in the run folder, named by its key
// (eval/confusion_matrix -> RUN/eval/confusion_matrix.csv; eval/val/confusion_matrix ->
// RUN/eval/val/confusion_matrix.csv), rewritten whole at each evaluation (the latest; a kill
// leaves the previous one whole). baton train adds it to every run that writes its folder.
//
//   true\predicted,T-shirt,Trouser,...
//   T-shirt,812,3,...
#pragma once

#include <filesystem>
#include <string>

#include "baton/core/logger.h"

namespace baton {

class TableFiles : public LoggerDestination {
 public:
  explicit TableFiles(std::filesystem::path folder) : folder_(std::move(folder)) {}
  void log_table(const std::string& key, const Table& table, int64_t step) override;

 private:
  std::filesystem::path folder_;
};

// The CSV text of `table` (what TableFiles writes).
std::string table_csv(const Table& table);

}  // namespace baton
