// The metrics by name: each registered once here (write it in src/metrics, register it, test it).
// A family of metrics (top<k>_accuracy) registers its pattern and the function that reads its
// parameter from a name.
#include "baton/core/registry.h"

#include <functional>
#include <optional>
#include <stdexcept>

#include "baton/metrics/metrics.h"

namespace baton {
namespace {

using Metrics = Registry<std::unique_ptr<Metric>>;

const Metrics& metric_registry() {
  static const Metrics metrics("metric", Metrics::Order::kRegistration,
                               {{"accuracy", [] { return std::unique_ptr<Metric>(std::make_unique<Accuracy>()); }},
                                {"loss", [] { return std::unique_ptr<Metric>(std::make_unique<CrossEntropy>()); }}});
  return metrics;
}

// A whole number k >= 1 between `prefix` and `suffix` in `name` (top5_accuracy: 5).
std::optional<int> parameter_between(const std::string& name, const std::string& prefix, const std::string& suffix) {
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int k = std::stoi(digits);
  return k >= 1 ? std::optional<int>(k) : std::nullopt;
}

struct Family {
  std::string pattern;                                              // as listed in metric_names()
  std::function<std::unique_ptr<Metric>(const std::string&)> make;  // nullptr when the name is not one
};

const std::vector<Family>& metric_families() {
  static const std::vector<Family> families = {
      {"top<k>_accuracy", [](const std::string& name) -> std::unique_ptr<Metric> {
         const auto k = parameter_between(name, "top", "_accuracy");
         return k ? std::make_unique<TopKAccuracy>(*k) : nullptr;
       }}};
  return families;
}

}  // namespace

std::vector<std::string> metric_names() {
  std::vector<std::string> names = metric_registry().names();
  for (const Family& family : metric_families()) names.push_back(family.pattern);
  return names;
}

std::unique_ptr<Metric> make_metric(const std::string& name) {
  if (metric_registry().contains(name)) return metric_registry().make(name);
  for (const Family& family : metric_families()) {
    if (auto metric = family.make(name)) return metric;
  }
  throw std::invalid_argument(unknown_name("metric", name, metric_names()));
}

}  // namespace baton
