#include <algorithm>
#include <cmath>
#include <set>

#include "sources.h"

namespace baton::dashboard {
namespace fs = std::filesystem;

namespace {

// Parameters with nested choices flattened: {"optimizer": {"_name": "sgd", "momentum": 0.9}}
// gives optimizer = "sgd" and optimizer.momentum = 0.9.
void flatten(const nlohmann::json& p, const std::string& prefix, std::map<std::string, nlohmann::json>& out) {
  for (const auto& [key, value] : p.items()) {
    if (value.is_object()) {
      out[prefix + key] = value.value("_name", nlohmann::json());
      for (const auto& [k, v] : value.items()) {
        if (k != "_name") flatten({{k, v}}, prefix + key + ".", out);
      }
    } else {
      out[prefix + key] = value;
    }
  }
}

// Bin labels of one parameter's values: numbers by quantile (n / 5 bins, 2 to 10), others by value.
std::vector<std::string> bins_of(const std::vector<nlohmann::json>& values) {
  std::vector<double> numbers;
  for (const auto& v : values) {
    if (v.is_number()) numbers.push_back(v.get<double>());
  }
  std::sort(numbers.begin(), numbers.end());
  std::vector<std::string> out;
  for (const auto& v : values) {
    if (!v.is_number() || numbers.empty()) {
      out.push_back(v.is_null() ? "(absent)" : v.dump());
      continue;
    }
    const auto rank =
        static_cast<double>(std::lower_bound(numbers.begin(), numbers.end(), v.get<double>()) - numbers.begin());
    const double bins = std::clamp(std::floor(static_cast<double>(numbers.size()) / 5.0), 2.0, 10.0);
    out.push_back("#" + std::to_string(static_cast<int>(bins * rank / static_cast<double>(numbers.size()))));
  }
  return out;
}

}  // namespace

nlohmann::json parameter_importance(const nlohmann::json& trials) {
  std::vector<double> y;
  std::vector<std::map<std::string, nlohmann::json>> rows;
  std::set<std::string> names;
  for (const auto& t : trials) {
    const auto v = final_of(t);
    if (!v || t.value("status", "") != "trained" || !std::isfinite(*v)) continue;
    y.push_back(*v);
    rows.emplace_back();
    flatten(t.value("parameters", nlohmann::json::object()), "", rows.back());
    for (const auto& [k, _] : rows.back()) names.insert(k);
  }
  nlohmann::json out = nlohmann::json::array();
  if (y.size() < 8) return out;  // fewer finished trials say nothing about importance
  double mean = 0;
  for (double v : y) mean += v;
  mean /= static_cast<double>(y.size());
  double total = 0;
  for (double v : y) total += (v - mean) * (v - mean);
  if (total <= 0) return out;
  for (const auto& name : names) {
    std::vector<nlohmann::json> values;
    values.reserve(rows.size());
    for (const auto& r : rows) values.push_back(r.count(name) ? r.at(name) : nlohmann::json());
    const auto bins = bins_of(values);
    std::map<std::string, std::pair<double, int>> groups;
    for (std::size_t i = 0; i < y.size(); ++i) {
      groups[bins[i]].first += y[i];
      ++groups[bins[i]].second;
    }
    double between = 0;
    for (const auto& [_, g] : groups) between += g.second * std::pow(g.first / g.second - mean, 2);
    // ε²: η² less what k bins explain of pure noise (without it, few trials in many bins look
    // important); 0 when the bins explain no more than that.
    const double k = static_cast<double>(groups.size()), n = static_cast<double>(y.size());
    const double within = n > k ? (total - between) / (n - k) : 0;
    out.push_back({{"parameter", name}, {"importance", std::max(0.0, (between - (k - 1) * within) / total)}});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a["importance"] > b["importance"]; });
  return out;
}

}  // namespace baton::dashboard
