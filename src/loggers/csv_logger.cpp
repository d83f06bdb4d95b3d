#include "baton/loggers/csv_logger.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "baton/core/state.h"
#include "baton/io/csv.h"

namespace baton {

std::string csv_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

struct CsvLogger::Impl {
  std::string path_;
  std::vector<std::string> columns_;
  std::vector<Row> rows_;  // written rows (kept to rewrite the file when a column appears)
  bool open_row_ = false;
  bool resume_ = false;
  Row current_{};
};

CsvLogger::~CsvLogger() = default;

CsvLogger::CsvLogger(const std::string& path, bool resume) : impl_(std::make_unique<Impl>()) {
  impl_->path_ = path;
  impl_->resume_ = resume;
  std::ofstream out(impl_->path_, resume ? std::ios::app : std::ios::trunc);
  if (!out) throw std::runtime_error(impl_->path_ + ": cannot write metrics.csv");
  if (!resume) out << "step,time\n";
}

void CsvLogger::read_back(int64_t batch) {
  std::ifstream in(impl_->path_);
  std::string line;
  if (batch <= 0 || !std::getline(in, line)) return;
  const std::vector<std::string> header = csv_fields(line);
  if (header.size() < 2 || header[0] != "step") return;
  impl_->columns_.assign(header.begin() + 2, header.end());
  while (std::getline(in, line)) {
    const std::vector<std::string> f = csv_fields(line);
    if (f.size() != header.size()) continue;  // cut short by a kill
    try {
      Row row{std::stoll(f[0]), std::stod(f[1]), {}};
      if (row.step > batch) continue;
      for (std::size_t c = 2; c < f.size(); ++c) {
        if (!f[c].empty()) row.values[header[c]] = std::stod(f[c]);
      }
      impl_->rows_.push_back(std::move(row));
    } catch (const std::exception&) {  // not a row baton wrote
    }
  }
}

void CsvLogger::after_load(State& state, Logger& /*logger*/) {
  if (!impl_->resume_) return;
  impl_->resume_ = false;
  read_back(state.timestamp.batch());
  rewrite();
}

void CsvLogger::log_metrics(const Metrics& metrics, int64_t step) {
  if (impl_->open_row_ && step != impl_->current_.step) flush_row();
  if (!impl_->open_row_) {
    impl_->current_ =
        Row{step, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(), {}};
    impl_->open_row_ = true;
  }
  for (const auto& [name, value] : metrics) impl_->current_.values[name] = value;
}

void CsvLogger::flush_row() {
  if (!impl_->open_row_) return;
  impl_->open_row_ = false;
  bool grown = false;
  for (const auto& [name, value] : impl_->current_.values) {
    if (std::find(impl_->columns_.begin(), impl_->columns_.end(), name) == impl_->columns_.end()) {
      impl_->columns_.push_back(name);
      grown = true;
    }
  }
  impl_->rows_.push_back(impl_->current_);
  if (grown) {
    rewrite();
  } else {
    append(impl_->current_);
  }
}

void CsvLogger::rewrite() {
  const std::string tmp = impl_->path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw std::runtime_error(impl_->path_ + ": cannot write metrics.csv");
    out << "step,time";
    for (const auto& c : impl_->columns_) out << ',' << csv_field(c);
    out << '\n';
    out.flush();
    if (!out) throw std::runtime_error(impl_->path_ + ": cannot write metrics.csv (the disk is full?)");
  }
  std::rename(tmp.c_str(), impl_->path_.c_str());
  for (const auto& row : impl_->rows_) append(row);
}

void CsvLogger::append(const Row& row) {
  std::ofstream out(impl_->path_, std::ios::app);
  if (!out) throw std::runtime_error(impl_->path_ + ": cannot write metrics.csv");
  char time[32];
  std::snprintf(time, sizeof time, "%.3f", row.time);
  out << row.step << ',' << time;
  for (const auto& c : impl_->columns_) {
    out << ',';
    const auto it = row.values.find(c);
    if (it != row.values.end()) out << csv_number(it->second);
  }
  out << '\n';
  out.flush();
  if (!out) throw std::runtime_error(impl_->path_ + ": cannot write metrics.csv (the disk is full?)");
}

void CsvLogger::epoch_end(State& /*state*/, Logger& /*logger*/) { flush_row(); }
void CsvLogger::fit_end(State& /*state*/, Logger& /*logger*/) { flush_row(); }
void CsvLogger::close(State& /*state*/, Logger& /*logger*/) { flush_row(); }

}  // namespace baton
