// Benchmark tables (NAS-Bench's idea): what each configuration's training logged at each step,
// answered instead of training: `baton search --engine table:FILE` searches one at no training
// cost, and bench/hpo_bench compares strategies on it.
//
//   auto table = baton::BenchmarkTable::read_csv("bench/nas_table.csv");
//   baton::SequentialEngine engine(table.trial_function({"eval/accuracy"}));
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/exec/engine.h"
#include "baton/exec/space.h"

namespace baton {

// A CSV file: lines that start with '#' are comments; the header names the parameter columns (a
// trial's parameters, nested ones as dotted keys: space.h's flat_parameters), then `step`, then the
// metric columns; one row per configuration and step.
class BenchmarkTable {
 public:
  ~BenchmarkTable();
  BenchmarkTable(BenchmarkTable&&) noexcept;
  BenchmarkTable& operator=(BenchmarkTable&&) noexcept;
  // Throws std::invalid_argument naming the file (and line): not a regular file or larger than
  // 256 MiB, no `step` column or none after it, a row with another number of cells than the
  // header, a step or a metric that is not a number, a configuration with a step twice.
  static BenchmarkTable read_csv(const std::string& path);

  const std::string& source() const;
  const std::vector<std::string>& parameters() const;
  const std::vector<std::string>& metrics() const;
  std::size_t configurations() const;

  // Throws std::invalid_argument when a parameter of `space` is not a column, or a metric is not.
  void check(const SearchSpace& space, const std::vector<std::string>& metrics) const;
  // The trial function an engine runs: the trial's configuration looked up, `metrics[0]`'s value
  // at each step reported as intermediate values, then the values of `metrics` (and of the
  // `constraints` metrics) at the last step as the final ones. A configuration the table does not
  // have, or has several of (a column the parameters leave open), throws: the trial fails, saying
  // which. A parameter column the trial does not set matches any value.
  TrialFunction trial_function(std::vector<std::string> metrics, std::vector<std::string> constraints = {}) const;
  // `metric`'s value at the last step of the configuration `parameters` choose; throws as a trial
  // fails (std::runtime_error: not there, several there; std::invalid_argument: no such metric).
  double value(const nlohmann::json& parameters, const std::string& metric) const;
  // Each configuration ({column: value}, numbers as numbers) and `metric`'s value at its last step.
  std::vector<std::pair<nlohmann::json, double>> finals(const std::string& metric) const;
  // The table's search space: each parameter column a choice of its values, in the order met.
  nlohmann::json space() const;

 private:
  BenchmarkTable();
  struct Configuration {
    std::vector<std::string> keys;  // per parameter column, canonical (numbers as %.17g)
    nlohmann::json parameters;
    std::vector<std::pair<long long, std::vector<double>>> steps;  // ascending
  };
  const Configuration& find(const nlohmann::json& parameters) const;
  std::size_t metric_index(const std::string& metric) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
