#include "baton/loggers/csv_logger.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace baton {
namespace {

std::string format(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// A column name as one CSV field (quoted when it holds a comma or a quote).
std::string field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

CsvLogger::CsvLogger(const std::string& path) : path_(path) {
  std::ofstream out(path_, std::ios::trunc);
  if (!out) throw std::runtime_error(path_ + ": cannot write metrics.csv");
  out << "step,time\n";
}

void CsvLogger::log_metrics(const Metrics& metrics, int64_t step) {
  if (open_row_ && step != current_.step) flush_row();
  if (!open_row_) {
    current_ =
        Row{step, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(), {}};
    open_row_ = true;
  }
  for (const auto& [name, value] : metrics) current_.values[name] = value;
}

void CsvLogger::flush_row() {
  if (!open_row_) return;
  open_row_ = false;
  bool grown = false;
  for (const auto& [name, value] : current_.values) {
    if (std::find(columns_.begin(), columns_.end(), name) == columns_.end()) {
      columns_.push_back(name);
      grown = true;
    }
  }
  rows_.push_back(current_);
  if (grown) {
    rewrite();
  } else {
    append(current_);
  }
}

void CsvLogger::rewrite() {
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw std::runtime_error(path_ + ": cannot write metrics.csv");
    out << "step,time";
    for (const auto& c : columns_) out << ',' << field(c);
    out << '\n';
  }
  std::rename(tmp.c_str(), path_.c_str());
  for (const auto& row : rows_) append(row);
}

void CsvLogger::append(const Row& row) {
  std::ofstream out(path_, std::ios::app);
  char time[32];
  std::snprintf(time, sizeof time, "%.3f", row.time);
  out << row.step << ',' << time;
  for (const auto& c : columns_) {
    out << ',';
    const auto it = row.values.find(c);
    if (it != row.values.end()) out << format(it->second);
  }
  out << '\n';
}

void CsvLogger::epoch_end(State& /*state*/, Logger& /*logger*/) { flush_row(); }
void CsvLogger::fit_end(State& /*state*/, Logger& /*logger*/) { flush_row(); }
void CsvLogger::close(State& /*state*/, Logger& /*logger*/) { flush_row(); }

}  // namespace baton
