// The metrics by name: each registered once here with the tasks it fits (write it in src/metrics,
// register it, test it against scikit-learn). A family of metrics (top<k>_accuracy, f1_micro)
// registers its pattern and the function that reads its parameter from a name.
#include "baton/core/registry.h"

#include <functional>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include "metrics/kinds.h"

namespace baton {
namespace {

using Make = std::function<std::unique_ptr<Metric>(const MetricContext&)>;
using Metrics = Registry<std::unique_ptr<Metric>, const MetricContext&>;

const std::set<TaskKind> kDecisions = {TaskKind::kClasses, TaskKind::kBinary};
const std::set<TaskKind> kClassesOnly = {TaskKind::kClasses};
const std::set<TaskKind> kValues = {TaskKind::kRegression};
const std::set<TaskKind> kAny = {TaskKind::kClasses, TaskKind::kBinary, TaskKind::kRegression};

std::string what_outputs(TaskKind task) {
  switch (task) {
    case TaskKind::kBinary: return "yes/no logits";
    case TaskKind::kRegression: return "values";
    case TaskKind::kClasses: break;
  }
  return "class logits";
}

// `make`, refusing a model whose outputs `name` does not fit.
Make fitting(const std::string& name, std::set<TaskKind> tasks, Make make) {
  return [name, tasks = std::move(tasks), make = std::move(make)](const MetricContext& context) {
    if (tasks.count(context.task) == 0) {
      std::string fits;
      for (const TaskKind t : tasks) fits += (fits.empty() ? "" : " or ") + what_outputs(t);
      throw std::invalid_argument("metric '" + name + "' needs " + fits + ", but loss " + context.loss_name +
                                  " gives " + what_outputs(context.task) +
                                  " (docs/recipes.md lists the metrics of each loss)");
    }
    return make(context);
  };
}

template <typename M, typename... A>
Make simple(A... args) {
  return [=](const MetricContext&) -> std::unique_ptr<Metric> { return std::make_unique<M>(args...); };
}

constexpr std::pair<ClassScores::Score, const char*> kScores[] = {{ClassScores::Score::kPrecision, "precision"},
                                                                  {ClassScores::Score::kRecall, "recall"},
                                                                  {ClassScores::Score::kF1, "f1"}};
constexpr std::pair<ClassScores::Average, const char*> kAverages[] = {{ClassScores::Average::kMacro, "macro"},
                                                                      {ClassScores::Average::kMicro, "micro"},
                                                                      {ClassScores::Average::kBinary, "binary"}};

Make class_scores(const std::string& name, ClassScores::Score score, ClassScores::Average average) {
  return fitting(name, kDecisions, [score, average](const MetricContext& c) -> std::unique_ptr<Metric> {
    return std::make_unique<ClassScores>(score, average, c.task);
  });
}

std::unique_ptr<Metric> loss_metric(const MetricContext& c) {
  if (c.task == TaskKind::kClasses || !c.loss_per_example) return std::make_unique<CrossEntropy>();
  return std::make_unique<MeanLoss>(c.loss_per_example);
}

const Metrics& metric_registry() {
  static const Metrics metrics = [] {
    Metrics m("metric", Metrics::Order::kRegistration);
    m.add("accuracy", fitting("accuracy", kDecisions, [](const MetricContext& c) -> std::unique_ptr<Metric> {
            return std::make_unique<Accuracy>(c.task);
          }));
    m.add("loss", fitting("loss", kAny, loss_metric));
    for (const auto& [score, name] : kScores) m.add(name, class_scores(name, score, ClassScores::Average::kDefault));
    m.add("auroc", fitting("auroc", kDecisions, [](const MetricContext& c) -> std::unique_ptr<Metric> {
            return std::make_unique<Auroc>(c.task);
          }));
    m.add("confusion_matrix",
          fitting("confusion_matrix", kDecisions, [](const MetricContext& c) -> std::unique_ptr<Metric> {
            return std::make_unique<ConfusionMatrix>(c.task);
          }));
    m.add("mse", fitting("mse", kValues, simple<RegressionMetric>(RegressionMetric::Kind::kMse)));
    m.add("mae", fitting("mae", kValues, simple<RegressionMetric>(RegressionMetric::Kind::kMae)));
    m.add("r2", fitting("r2", kValues, simple<RegressionMetric>(RegressionMetric::Kind::kR2)));
    m.add("perplexity", fitting("perplexity", kClassesOnly, simple<Perplexity>()));
    return m;
  }();
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
  std::string pattern;                           // as listed in metric_names()
  std::function<Make(const std::string&)> make;  // nullptr when the name is not one
};

const std::vector<Family>& metric_families() {
  static const std::vector<Family> families = {
      {"top<k>_accuracy",
       [](const std::string& name) -> Make {
         const auto k = parameter_between(name, "top", "_accuracy");
         if (!k) return nullptr;
         return fitting(name, kClassesOnly, simple<TopKAccuracy>(int64_t{*k}));
       }},
      {"<precision|recall|f1>_<macro|micro|binary>", [](const std::string& name) -> Make {
         for (const auto& [score, score_name] : kScores) {
           for (const auto& [average, average_name] : kAverages) {
             if (name == std::string(score_name) + "_" + average_name) return class_scores(name, score, average);
           }
         }
         return nullptr;
       }}};
  return families;
}

}  // namespace

std::vector<std::string> metric_names() {
  std::vector<std::string> names = metric_registry().names();
  for (const Family& family : metric_families()) names.push_back(family.pattern);
  return names;
}

std::unique_ptr<Metric> make_metric(const std::string& name, const MetricContext& context) {
  if (metric_registry().contains(name)) return metric_registry().make(name, context);
  for (const Family& family : metric_families()) {
    if (auto make = family.make(name)) return make(context);
  }
  throw std::invalid_argument(unknown_name("metric", name, metric_names()));
}

}  // namespace baton
