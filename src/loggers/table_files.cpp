#include "baton/loggers/table_files.h"

#include <stdexcept>

#include "baton/io/write.h"
#include "baton/loggers/csv_logger.h"

namespace baton {
namespace {

std::string table_label(const Table& table, std::size_t i) {
  return i < table.labels.size() ? csv_field(table.labels[i]) : std::to_string(i);
}

}  // namespace

std::string table_csv(const Table& table) {
  std::string out = "true\\predicted";
  const std::size_t columns = table.rows.empty() ? 0 : table.rows.front().size();
  for (std::size_t c = 0; c < columns; ++c) out.append(",").append(table_label(table, c));
  out += '\n';
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    out.append(table_label(table, r));
    for (const double v : table.rows[r]) out.append(",").append(csv_number(v));
    out += '\n';
  }
  return out;
}

void TableFiles::log_table(const std::string& key, const Table& table, int64_t /*step*/) {
  if (key.empty() || key.find("..") != std::string::npos || key.front() == '/') {
    throw std::invalid_argument("TableFiles: '" + key + "' is not a relative name");
  }
  const std::filesystem::path path = folder_ / (key + ".csv");
  std::filesystem::create_directories(path.parent_path());
  write_file_atomically(path.string(), table_csv(table));
}

}  // namespace baton
