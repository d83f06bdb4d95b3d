#include "baton/exec/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "baton/core/options.h"
#include "baton/io/csv.h"
#include "baton/io/file.h"

namespace baton {
namespace {

std::optional<double> number_of(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string canonical_number(double v) {
  char out[32];
  std::snprintf(out, sizeof out, "%.17g", v);
  return out;
}

// A cell or a parameter's value as the table compares them: numbers by value (16, 16.0 and "16"
// are one), the rest as text.
std::string canonical(const std::string& text) {
  const auto v = number_of(text);
  return v ? canonical_number(*v) : text;
}

std::string canonical(const nlohmann::json& value) {
  if (value.is_number()) return canonical_number(value.get<double>());
  if (value.is_string()) return canonical(value.get<std::string>());
  return value.dump();
}

nlohmann::json cell_value(const std::string& text) {
  const auto v = number_of(text);
  if (!v) return text;
  if (*v == std::floor(*v) && std::fabs(*v) < 9e15) return static_cast<long long>(*v);
  return *v;
}

}  // namespace

struct BenchmarkTable::Impl {
  std::string source_;
  std::vector<std::string> parameters_, metrics_;
  std::vector<Configuration> configurations_;
};

BenchmarkTable::BenchmarkTable() : impl_(std::make_unique<Impl>()) {}
BenchmarkTable::~BenchmarkTable() = default;
BenchmarkTable::BenchmarkTable(BenchmarkTable&&) noexcept = default;
BenchmarkTable& BenchmarkTable::operator=(BenchmarkTable&&) noexcept = default;

const std::string& BenchmarkTable::source() const { return impl_->source_; }
const std::vector<std::string>& BenchmarkTable::parameters() const { return impl_->parameters_; }
const std::vector<std::string>& BenchmarkTable::metrics() const { return impl_->metrics_; }
std::size_t BenchmarkTable::configurations() const { return impl_->configurations_.size(); }

BenchmarkTable BenchmarkTable::read_csv(const std::string& path) {
  std::string text;
  try {
    text = read_file(path, {.what = "the benchmark table", .max_bytes = 256ull << 20});
  } catch (const FileError& e) {
    throw std::invalid_argument(e.what());
  }
  BenchmarkTable table;
  table.impl_->source_ = path;
  std::istringstream in(text);
  std::vector<std::string> header;
  std::size_t step_column = 0;
  std::map<std::vector<std::string>, std::size_t> index;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (trimmed(line).empty() || trimmed(line)[0] == '#') continue;
    auto cells = csv_fields(line);
    for (auto& cell : cells) cell = trimmed(cell);
    if (header.empty()) {
      header = cells;
      const auto step = std::find(header.begin(), header.end(), "step");
      if (step == header.end() || step + 1 == header.end())
        throw std::invalid_argument(where + "the header needs the parameter columns, then `step`, then the metrics");
      step_column = static_cast<std::size_t>(step - header.begin());
      table.impl_->parameters_.assign(header.begin(), step);
      table.impl_->metrics_.assign(step + 1, header.end());
      continue;
    }
    if (cells.size() != header.size()) {
      throw std::invalid_argument(where + std::to_string(cells.size()) + " cells, but the header has " +
                                  std::to_string(header.size()));
    }
    std::vector<std::string> keys(cells.begin(), cells.begin() + static_cast<std::ptrdiff_t>(step_column));
    for (auto& k : keys) k = canonical(k);
    const auto step = number_of(cells[step_column]);
    // A step beyond 2^53 is no longer a whole number a double holds (and beyond 2^63 turned negative).
    if (!step || *step != std::floor(*step) || *step < 0 || *step > 9007199254740992.0) {
      throw std::invalid_argument(where + "step '" + cells[step_column] + "' is not a whole number from 0 to 2^53");
    }
    std::vector<double> values;
    for (std::size_t m = step_column + 1; m < cells.size(); ++m) {
      const auto v = number_of(cells[m]);
      if (!v) throw std::invalid_argument(where + header[m] + " '" + cells[m] + "' is not a number");
      values.push_back(*v);
    }
    auto [at, added] = index.try_emplace(keys, table.impl_->configurations_.size());
    if (added) {
      Configuration c;
      c.keys = keys;
      c.parameters = nlohmann::json::object();
      for (std::size_t p = 0; p < step_column; ++p) c.parameters[header[p]] = cell_value(cells[p]);
      table.impl_->configurations_.push_back(std::move(c));
    }
    auto& steps = table.impl_->configurations_[at->second].steps;
    const auto s = static_cast<long long>(*step);
    if (std::any_of(steps.begin(), steps.end(), [&](const auto& e) { return e.first == s; }))
      throw std::invalid_argument(where + "step " + std::to_string(s) + " of this configuration is there twice");
    steps.emplace_back(s, std::move(values));
  }
  if (table.impl_->configurations_.empty()) throw std::invalid_argument(path + ": the benchmark table has no rows");
  for (auto& c : table.impl_->configurations_) std::sort(c.steps.begin(), c.steps.end());
  return table;
}

std::size_t BenchmarkTable::metric_index(const std::string& metric) const {
  const auto it = std::find(impl_->metrics_.begin(), impl_->metrics_.end(), metric);
  if (it == impl_->metrics_.end()) {
    std::string known;
    for (const auto& m : impl_->metrics_) known += (known.empty() ? "" : ", ") + m;
    throw std::invalid_argument(impl_->source_ + ": the benchmark table has no metric '" + metric +
                                "' (its metrics: " + known + ")");
  }
  return static_cast<std::size_t>(it - impl_->metrics_.begin());
}

void BenchmarkTable::check(const SearchSpace& space, const std::vector<std::string>& metrics) const {
  for (const auto& d : space.dimensions()) {
    const bool column = std::any_of(impl_->parameters_.begin(), impl_->parameters_.end(),
                                    [&](const std::string& p) { return p == d.name || p.rfind(d.name + ".", 0) == 0; });
    if (!column) {
      std::string known;
      for (const auto& p : impl_->parameters_) known += (known.empty() ? "" : ", ") + p;
      throw std::invalid_argument(impl_->source_ + ": the benchmark table has no column for the space's parameter '" +
                                  d.name + "' (its parameter columns: " + known + ")");
    }
  }
  for (const auto& m : metrics) (void)metric_index(m);
}

const BenchmarkTable::Configuration& BenchmarkTable::find(const nlohmann::json& parameters) const {
  std::vector<std::pair<std::size_t, std::string>> wanted;  // column, canonical value
  for (const auto& [key, value] : flat_parameters(parameters)) {
    const auto it = std::find(impl_->parameters_.begin(), impl_->parameters_.end(), key);
    if (it == impl_->parameters_.end())
      throw std::runtime_error(impl_->source_ + ": the benchmark table has no column '" + key + "'");
    wanted.emplace_back(static_cast<std::size_t>(it - impl_->parameters_.begin()), canonical(value));
  }
  const Configuration* found = nullptr;
  for (const auto& c : impl_->configurations_) {
    if (!std::all_of(wanted.begin(), wanted.end(), [&](const auto& w) { return c.keys[w.first] == w.second; }))
      continue;
    if (found != nullptr) {
      throw std::runtime_error(impl_->source_ + ": the benchmark table has several configurations for " +
                               parameters.dump() + " (" + found->parameters.dump() + ", " + c.parameters.dump() +
                               "): the space must set every column that varies");
    }
    found = &c;
  }
  if (found == nullptr)
    throw std::runtime_error(impl_->source_ + ": the benchmark table has no configuration " + parameters.dump());
  return *found;
}

TrialFunction BenchmarkTable::trial_function(std::vector<std::string> metrics,
                                             std::vector<std::string> constraints) const {
  if (metrics.empty()) throw std::invalid_argument("a benchmark table's trials need a metric");
  std::vector<std::size_t> objective, constrained;
  for (const auto& m : metrics) objective.push_back(metric_index(m));
  for (const auto& m : constraints) constrained.push_back(metric_index(m));
  return [this, objective, constrained](TrialContext& t) {
    const Configuration& c = find(t.parameters());
    for (const auto& [step, values] : c.steps) {
      if (t.should_stop()) return;
      t.report_intermediate(values[objective.front()], step);
    }
    const std::vector<double>& last = c.steps.back().second;
    if (objective.size() == 1 && constrained.empty()) {
      t.report_final(last[objective.front()]);
      return;
    }
    std::vector<double> values, limits;
    for (std::size_t i : objective) values.push_back(last[i]);
    for (std::size_t i : constrained) limits.push_back(last[i]);
    t.report_values(values, limits);
  };
}

double BenchmarkTable::value(const nlohmann::json& parameters, const std::string& metric) const {
  const std::size_t m = metric_index(metric);
  return find(parameters).steps.back().second[m];
}

std::vector<std::pair<nlohmann::json, double>> BenchmarkTable::finals(const std::string& metric) const {
  const std::size_t m = metric_index(metric);
  std::vector<std::pair<nlohmann::json, double>> out;
  for (const auto& c : impl_->configurations_) out.emplace_back(c.parameters, c.steps.back().second[m]);
  return out;
}

nlohmann::json BenchmarkTable::space() const {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t p = 0; p < impl_->parameters_.size(); ++p) {
    nlohmann::json values = nlohmann::json::array();
    std::vector<std::string> seen;
    for (const auto& c : impl_->configurations_) {
      if (std::find(seen.begin(), seen.end(), c.keys[p]) != seen.end()) continue;
      seen.push_back(c.keys[p]);
      values.push_back(c.parameters[impl_->parameters_[p]]);
    }
    out[impl_->parameters_[p]] = {{"_type", "choice"}, {"_value", values}};
  }
  return out;
}

}  // namespace baton
