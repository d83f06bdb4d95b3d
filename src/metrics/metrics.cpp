#include "baton/metrics/metrics.h"
#include "metrics/kinds.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/core/options.h"
#include "baton/core/state.h"
#include "metrics/decisions.h"

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

void Accuracy::update(const at::Tensor& outputs, const at::Tensor& targets) {
  const Decisions d = decide(outputs, targets, task_);
  const at::Tensor right = d.predicted.eq(d.truth);
  accumulate(correct_, (d.multilabel ? right.all(1) : right).sum());
  seen_ += d.predicted.size(0);
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

double Perplexity::compute() const { return std::exp(CrossEntropy::compute()); }

void MeanLoss::update(const at::Tensor& outputs, const at::Tensor& targets) {
  const at::Tensor per_example = per_example_(outputs, targets);
  accumulate(sum_, per_example.sum().to(torch::kDouble));
  seen_ += per_example.size(0);
}

double MeanLoss::compute() const { return ratio(value_of(sum_), seen_, name()); }

void MeanLoss::reset() {
  sum_ = at::Tensor();
  seen_ = 0;
}

std::vector<double> MeanLoss::sums() const { return {value_of(sum_), static_cast<double>(seen_)}; }

void MeanLoss::set_sums(const std::vector<double>& sums) {
  if (sums.size() != 2) throw std::invalid_argument(name() + ": set_sums wants 2 values");
  sum_ = torch::full({}, sums[0], torch::kDouble);
  seen_ = std::llround(sums[1]);
}

// --- regression ---

std::string RegressionMetric::name() const {
  switch (kind_) {
    case Kind::kMse: return "mse";
    case Kind::kMae: return "mae";
    case Kind::kR2: break;
  }
  return "r2";
}

void RegressionMetric::update(const at::Tensor& outputs, const at::Tensor& targets) {
  if (outputs.dim() != 2 || targets.size(0) != outputs.size(0) || targets.numel() != outputs.numel()) {
    throw std::invalid_argument(name() + ": outputs " + c10::str(outputs.sizes()) + " and targets " +
                                c10::str(targets.sizes()) + " do not fit (targets [N] need 1 output, [N, K] need K)");
  }
  const at::Tensor y = targets.reshape(outputs.sizes()).to(torch::kDouble);
  const at::Tensor error = outputs.to(torch::kDouble) - y;
  const at::Tensor columns = torch::stack({y.sum(0), y.square().sum(0), error.square().sum(0), error.abs().sum(0)}, 1);
  const at::Tensor batch =
      torch::cat({torch::full({1}, static_cast<double>(outputs.size(0)), y.options()), columns.flatten()});
  if (sums_.defined() && sums_.numel() != batch.numel()) {
    throw std::invalid_argument(name() + ": outputs of " + std::to_string(outputs.size(1)) +
                                " values after batches of " + std::to_string((sums_.numel() - 1) / 4));
  }
  accumulate(sums_, batch);
}

double RegressionMetric::compute() const {
  const std::vector<double> s = sums();
  if (s.empty() || s[0] == 0) throw std::logic_error("metric '" + name() + "' has seen no examples");
  const double n = s[0];
  const std::size_t k = (s.size() - 1) / 4;
  double total = 0;
  for (std::size_t c = 0; c < k; ++c) {
    const double* col = &s[1 + 4 * c];  // Σy, Σy², SSE, SAE
    if (kind_ == Kind::kMse) {
      total += col[2] / n;
    } else if (kind_ == Kind::kMae) {
      total += col[3] / n;
    } else {
      // SST as Σy² - (Σy)²/n; what is left of a constant target's is rounding, not variance.
      const double sst = col[1] - col[0] * col[0] / n;
      const bool constant = sst <= 1e-12 * std::max(col[1], 1e-300);
      total += constant ? (col[2] == 0 ? 1.0 : 0.0) : 1.0 - col[2] / sst;
    }
  }
  return total / static_cast<double>(k);
}

void RegressionMetric::reset() { sums_ = at::Tensor(); }

std::vector<double> RegressionMetric::sums() const {
  if (!sums_.defined()) return {};
  const at::Tensor cpu = sums_.to(torch::kCPU).contiguous();
  return {cpu.data_ptr<double>(), cpu.data_ptr<double>() + cpu.numel()};
}

void RegressionMetric::set_sums(const std::vector<double>& sums) {
  if (!sums.empty() && (sums.size() - 1) % 4 != 0)
    throw std::invalid_argument(name() + ": set_sums wants 1 + 4 per output");
  sums_ = sums.empty() ? at::Tensor() : torch::tensor(sums, torch::kDouble);
}

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
