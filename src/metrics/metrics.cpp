#include "baton/metrics/metrics.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/core/options.h"
#include "baton/core/state.h"

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

// Adds `value` to a sum that stays where the value is (no read from the device).
void accumulate(at::Tensor& sum, const at::Tensor& value) {
  if (sum.defined()) {
    sum.add_(value);
  } else {
    sum = value;
  }
}

double value_of(const at::Tensor& sum) { return sum.defined() ? sum.item<double>() : 0.0; }

}  // namespace

void Accuracy::update(const at::Tensor& sequence_outputs, const at::Tensor& sequence_targets) {
  const auto [outputs, targets] = positions_as_rows(sequence_outputs, sequence_targets);
  accumulate(correct_, outputs.argmax(1).eq(class_indices(targets)).sum());
  seen_ += outputs.size(0);
}

double Accuracy::compute() const { return ratio(value_of(correct_), seen_, name()); }

void Accuracy::reset() {
  correct_ = at::Tensor();
  seen_ = 0;
}

std::vector<double> Accuracy::sums() const { return {value_of(correct_), static_cast<double>(seen_)}; }

void TopKAccuracy::update(const at::Tensor& sequence_outputs, const at::Tensor& sequence_targets) {
  const auto [outputs, targets] = positions_as_rows(sequence_outputs, sequence_targets);
  const int64_t k = std::min<int64_t>(k_, outputs.size(1));
  const at::Tensor top = std::get<1>(outputs.topk(k, 1));
  accumulate(correct_, top.eq(class_indices(targets).unsqueeze(1)).any(1).sum());
  seen_ += outputs.size(0);
}

void CrossEntropy::update(const at::Tensor& sequence_outputs, const at::Tensor& sequence_targets) {
  const auto [outputs, targets] = positions_as_rows(sequence_outputs, sequence_targets);
  at::Tensor per_example;
  if (targets.dim() == 2 && at::isFloatingType(targets.scalar_type())) {
    per_example = -(targets * torch::log_softmax(outputs.to(torch::kFloat), 1)).sum(1);
  } else {
    per_example = torch::nn::functional::cross_entropy(
        outputs.to(torch::kFloat), targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  }
  accumulate(sum_, per_example.sum().to(torch::kDouble));
  seen_ += outputs.size(0);
}

double CrossEntropy::compute() const { return ratio(value_of(sum_), seen_, name()); }

void CrossEntropy::reset() {
  sum_ = at::Tensor();
  seen_ = 0;
}

std::vector<double> CrossEntropy::sums() const { return {value_of(sum_), static_cast<double>(seen_)}; }

void Accuracy::set_sums(const std::vector<double>& sums) {
  if (sums.size() != 2) throw std::invalid_argument(name() + ": set_sums wants 2 values");
  correct_ = torch::full({}, static_cast<int64_t>(std::llround(sums[0])), torch::kLong);
  seen_ = std::llround(sums[1]);
}

void CrossEntropy::set_sums(const std::vector<double>& sums) {
  if (sums.size() != 2) throw std::invalid_argument(name() + ": set_sums wants 2 values");
  sum_ = torch::full({}, sums[0], torch::kDouble);
  seen_ = std::llround(sums[1]);
}

}  // namespace baton
