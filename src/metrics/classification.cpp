// The metrics of class decisions: precision, recall, F1, the confusion matrix and AUROC, each as
// scikit-learn computes it on the same predictions.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/core/state.h"
#include "metrics/decisions.h"
#include "metrics/kinds.h"

namespace baton {
namespace {

double ratio_or_zero(double num, double den) { return den > 0 ? num / den : 0.0; }

std::vector<double> to_doubles(const at::Tensor& t) {
  const at::Tensor cpu = t.to(torch::kCPU, torch::kDouble).contiguous();
  return {cpu.data_ptr<double>(), cpu.data_ptr<double>() + cpu.numel()};
}

}  // namespace

Decisions decide(const at::Tensor& sequence_outputs, const at::Tensor& sequence_targets, TaskKind task) {
  const auto [outputs, targets] = positions_as_rows(sequence_outputs, sequence_targets);
  if (outputs.dim() != 2) {
    throw std::invalid_argument("metric: outputs of shape " + c10::str(outputs.sizes()) + ", expected [N, outputs]");
  }
  Decisions d;
  const int64_t k = outputs.size(1);
  if (task == TaskKind::kClasses) {
    d.predicted = outputs.argmax(1);
    d.truth =
        targets.dim() == 2 && at::isFloatingType(targets.scalar_type()) ? targets.argmax(1) : targets.to(torch::kLong);
    d.classes = k;
    return d;
  }
  at::Tensor truth;
  if (targets.dim() == 1 && !at::isFloatingType(targets.scalar_type()) && k > 1) {
    truth = torch::nn::functional::one_hot(targets, k);  // class indices, one yes/no a class
  } else {
    truth = targets.reshape(outputs.sizes()).gt(0.5).to(torch::kLong);
  }
  const at::Tensor yes = outputs.gt(0).to(torch::kLong);
  if (k == 1) {  // binary: two classes, 0 and 1
    d.predicted = yes.flatten();
    d.truth = truth.flatten();
    d.classes = 2;
  } else {
    d.predicted = yes;
    d.truth = truth;
    d.classes = k;
    d.multilabel = true;
  }
  return d;
}

// --- precision, recall, F1 ---

std::string ClassScores::name() const {
  static const char* const kScores[] = {"precision", "recall", "f1"};
  static const char* const kAverages[] = {"", "_macro", "_micro", "_binary"};
  return std::string(kScores[static_cast<int>(score_)]) + kAverages[static_cast<int>(average_)];
}

void ClassScores::update(const at::Tensor& outputs, const at::Tensor& targets) {
  const Decisions d = decide(outputs, targets, task_);
  at::Tensor counts;
  if (d.multilabel) {
    counts = torch::stack({(d.predicted * d.truth).sum(0), d.predicted.sum(0), d.truth.sum(0)}, 1);
  } else {
    const at::Tensor right = d.predicted.eq(d.truth);
    counts = torch::stack({at::bincount(d.truth.masked_select(right), {}, d.classes),
                           at::bincount(d.predicted, {}, d.classes), at::bincount(d.truth, {}, d.classes)},
                          1);
  }
  if (counts_.defined() && counts_.size(0) != counts.size(0)) {
    throw std::invalid_argument(name() + ": outputs of " + std::to_string(counts.size(0)) +
                                " classes after batches of " + std::to_string(counts_.size(0)));
  }
  counts_ = counts_.defined() ? counts_ + counts : counts;
  multilabel_ = d.multilabel;
}

double ClassScores::compute() const {
  if (!counts_.defined()) throw std::logic_error("metric '" + name() + "' has seen no examples");
  const std::vector<double> c = to_doubles(counts_);
  const std::size_t classes = c.size() / 3;
  auto score = [&](double tp, double predicted, double truth) {
    switch (score_) {
      case Score::kPrecision: return ratio_or_zero(tp, predicted);
      case Score::kRecall: return ratio_or_zero(tp, truth);
      case Score::kF1: break;
    }
    return ratio_or_zero(2 * tp, predicted + truth);
  };
  Average average = average_;
  if (average == Average::kDefault)
    average = !multilabel_ && classes == 2 && task_ == TaskKind::kBinary ? Average::kBinary : Average::kMacro;
  if (average == Average::kBinary) {
    if (multilabel_ || classes != 2) {
      throw std::invalid_argument(name() + ": the binary average needs two classes (or one yes/no output), not " +
                                  std::to_string(classes) + (multilabel_ ? " labels" : " classes") +
                                  "; use the macro or micro average");
    }
    return score(c[3], c[4], c[5]);
  }
  double tp = 0, predicted = 0, truth = 0, sum = 0;
  int64_t counted = 0;
  for (std::size_t i = 0; i < classes; ++i) {
    const double* row = &c[3 * i];
    if (!multilabel_ && row[1] + row[2] == 0) continue;  // a class in neither (scikit-learn's labels)
    tp += row[0];
    predicted += row[1];
    truth += row[2];
    sum += score(row[0], row[1], row[2]);
    ++counted;
  }
  if (average == Average::kMicro) return score(tp, predicted, truth);
  return counted > 0 ? sum / static_cast<double>(counted) : 0.0;
}

void ClassScores::reset() { counts_ = at::Tensor(); }

std::vector<double> ClassScores::sums() const {
  std::vector<double> out{multilabel_ ? 1.0 : 0.0};
  if (counts_.defined()) {
    const std::vector<double> c = to_doubles(counts_);
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

void ClassScores::set_sums(const std::vector<double>& sums) {
  if (sums.empty() || (sums.size() - 1) % 3 != 0)
    throw std::invalid_argument(name() + ": set_sums wants 1 + 3 per class");
  multilabel_ = sums[0] > 0;
  counts_ = sums.size() == 1 ? at::Tensor()
                             : torch::tensor(std::vector<double>(sums.begin() + 1, sums.end()), torch::kDouble)
                                   .round()
                                   .to(torch::kLong)
                                   .view({-1, 3});
}

// --- the confusion matrix ---

void ConfusionMatrix::update(const at::Tensor& outputs, const at::Tensor& targets) {
  const Decisions d = decide(outputs, targets, task_);
  if (d.multilabel) {
    throw std::invalid_argument("confusion_matrix: a multi-label model's outputs (" + std::to_string(d.classes) +
                                " yes/no labels) have no one confusion matrix; use precision, recall or f1");
  }
  const at::Tensor counts = at::bincount(d.truth * d.classes + d.predicted, {}, d.classes * d.classes);
  counts_ = counts_.defined() ? counts_ + counts : counts;
}

double ConfusionMatrix::compute() const {
  if (!counts_.defined()) throw std::logic_error("metric 'confusion_matrix' has seen no examples");
  return counts_.sum().item<double>();
}

void ConfusionMatrix::reset() { counts_ = at::Tensor(); }

std::vector<double> ConfusionMatrix::sums() const {
  return counts_.defined() ? to_doubles(counts_) : std::vector<double>{};
}

void ConfusionMatrix::set_sums(const std::vector<double>& sums) {
  const auto c = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(sums.size()))));
  if (c * c != sums.size()) throw std::invalid_argument("confusion_matrix: set_sums wants C * C counts");
  counts_ = sums.empty() ? at::Tensor() : torch::tensor(sums, torch::kDouble).round().to(torch::kLong);
}

std::vector<std::vector<double>> ConfusionMatrix::table() const {
  const std::vector<double> c = sums();
  const auto n = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(c.size()))));
  std::vector<std::vector<double>> rows(n);
  for (std::size_t i = 0; i < n; ++i)
    rows[i].assign(c.begin() + static_cast<std::ptrdiff_t>(i * n),
                   c.begin() + static_cast<std::ptrdiff_t>((i + 1) * n));
  return rows;
}

}  // namespace baton
