// CsvLogger: metrics.csv, one row per step, a column per metric in the order metrics first appear
// (a new metric adds a column: the file is rewritten with it, earlier rows empty there).
//
//   step,time,train/loss,eval/accuracy
//   1,1763800000.12,2.29,
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "baton/core/logger.h"

namespace baton {

class CsvLogger : public LoggerDestination {
 public:
  ~CsvLogger() override;
  // Creates or truncates `path`. With `resume` (baton train --autoresume) it keeps the rows of the
  // run it continues instead: at after_load, those up to the batch the run resumed from (none when
  // it starts afresh; a row cut short by a kill is dropped). Throws std::runtime_error naming the
  // path when it cannot write there.
  explicit CsvLogger(const std::string& path, bool resume = false);

  void log_metrics(const Metrics& metrics, int64_t step) override;
  void after_load(State& state, Logger& logger) override;
  void epoch_end(State& state, Logger& logger) override;
  void fit_end(State& state, Logger& logger) override;
  void close(State& state, Logger& logger) override;

 private:
  struct Row {
    int64_t step;
    double time;
    std::map<std::string, double> values;
  };
  void flush_row();
  // The rows (and their columns) of the file up to `batch`.
  void read_back(int64_t batch);
  void rewrite();
  void append(const Row& row);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text);
// A number as CSV cells hold it (%.10g: 17 becomes "17").
std::string csv_number(double value);

}  // namespace baton
