#include "baton/metrics/metrics.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

namespace baton {
namespace {

// Class indices, from indices or from probabilities.
at::Tensor class_indices(const at::Tensor& targets) {
  return targets.dim() == 2 && at::isFloatingType(targets.scalar_type()) ? targets.argmax(1) : targets;
}

double ratio(double num, int64_t den, const std::string& name) {
  if (den == 0) throw std::logic_error("metric '" + name + "' has seen no examples");
  return num / static_cast<double>(den);
}

}  // namespace

void Accuracy::update(const at::Tensor& outputs, const at::Tensor& targets) {
  correct_ += outputs.argmax(1).eq(class_indices(targets)).sum().item<int64_t>();
  seen_ += outputs.size(0);
}

double Accuracy::compute() const { return ratio(static_cast<double>(correct_), seen_, name()); }

void TopKAccuracy::update(const at::Tensor& outputs, const at::Tensor& targets) {
  const int64_t k = std::min<int64_t>(k_, outputs.size(1));
  const at::Tensor top = std::get<1>(outputs.topk(k, 1));
  correct_ += top.eq(class_indices(targets).unsqueeze(1)).any(1).sum().item<int64_t>();
  seen_ += outputs.size(0);
}

void CrossEntropy::update(const at::Tensor& outputs, const at::Tensor& targets) {
  at::Tensor per_example;
  if (targets.dim() == 2 && at::isFloatingType(targets.scalar_type())) {
    per_example = -(targets * torch::log_softmax(outputs.to(torch::kFloat), 1)).sum(1);
  } else {
    per_example = torch::nn::functional::cross_entropy(
        outputs.to(torch::kFloat), targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  }
  sum_ += per_example.sum().item<double>();
  seen_ += outputs.size(0);
}

double CrossEntropy::compute() const { return ratio(sum_, seen_, name()); }

void Accuracy::set_sums(const std::vector<double>& sums) {
  if (sums.size() != 2) throw std::invalid_argument(name() + ": set_sums wants 2 values");
  correct_ = std::llround(sums[0]);
  seen_ = std::llround(sums[1]);
}

void CrossEntropy::set_sums(const std::vector<double>& sums) {
  if (sums.size() != 2) throw std::invalid_argument(name() + ": set_sums wants 2 values");
  sum_ = sums[0];
  seen_ = std::llround(sums[1]);
}

std::unique_ptr<Metric> make_metric(const std::string& name) {
  if (name == "accuracy") return std::make_unique<Accuracy>();
  if (name == "loss") return std::make_unique<CrossEntropy>();
  if (name.rfind("top", 0) == 0 && name.size() > 12 && name.substr(name.size() - 9) == "_accuracy") {
    try {
      const int k = std::stoi(name.substr(3, name.size() - 12));
      if (k >= 1) return std::make_unique<TopKAccuracy>(k);
    } catch (const std::exception&) {
    }
  }
  throw std::invalid_argument("unknown metric '" + name + "' (known: accuracy, top<k>_accuracy, loss)");
}

}  // namespace baton
