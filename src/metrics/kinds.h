// The metrics make_metric builds (baton/metrics/metrics.h): their state, private to the library.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "baton/core/task.h"
#include "baton/metrics/metrics.h"

namespace baton {

// The share of examples predicted right: the class of the largest logit (classes), every yes/no
// at logit > 0 (binary and multi-label: all of an example's labels right, scikit-learn's subset
// accuracy).
class Accuracy : public Metric {
 public:
  explicit Accuracy(TaskKind task = TaskKind::kClasses) : task_(task) {}
  std::string name() const override { return "accuracy"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets) override;
  double compute() const override;
  void reset() override;
  std::vector<double> sums() const override;
  void set_sums(const std::vector<double>& sums) override;

 protected:
  TaskKind task_;
  at::Tensor correct_;  // on the outputs' device; undefined before the first update
  int64_t seen_ = 0;
};

class TopKAccuracy : public Accuracy {
 public:
  explicit TopKAccuracy(int64_t k) : k_(k) {}
  std::string name() const override { return "top" + std::to_string(k_) + "_accuracy"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets) override;

 private:
  int64_t k_;
};

// The mean cross-entropy per example (a sequence's positions each an example).
class CrossEntropy : public Metric {
 public:
  std::string name() const override { return "loss"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets) override;
  double compute() const override;
  void reset() override;
  std::vector<double> sums() const override;
  void set_sums(const std::vector<double>& sums) override;

 private:
  at::Tensor sum_;  // float64 on the outputs' device; undefined before the first update
  int64_t seen_ = 0;
};

// The mean of a loss's per-example values ("loss" for a model trained with another loss than
// cross-entropy).
class MeanLoss : public Metric {
 public:
  explicit MeanLoss(std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> per_example)
      : per_example_(std::move(per_example)) {}
  std::string name() const override { return "loss"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets) override;
  double compute() const override;
  void reset() override;
  std::vector<double> sums() const override;
  void set_sums(const std::vector<double>& sums) override;

 private:
  std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> per_example_;
  at::Tensor sum_;
  int64_t seen_ = 0;
};

// exp of the mean cross-entropy (language models' perplexity).
class Perplexity : public CrossEntropy {
 public:
  std::string name() const override { return "perplexity"; }
  double compute() const override;
};

// Precision, recall or F1 as scikit-learn computes them (zero_division 0), from each class's true
// positives, predictions and truths (classes: the largest logit; yes/no outputs: logit > 0):
//   macro   the mean of the classes' scores (the classes in the truths or the predictions; every
//           label of a multi-label model)
//   micro   the score of every decision pooled
//   binary  the positive class's (one yes/no output, or two classes)
// kDefault is binary for one yes/no output and macro otherwise; the name says a chosen average
// (f1_micro), not the default (f1).
class ClassScores : public Metric {
 public:
  enum class Score { kPrecision, kRecall, kF1 };
  enum class Average { kDefault, kMacro, kMicro, kBinary };
  ClassScores(Score score, Average average, TaskKind task) : score_(score), average_(average), task_(task) {}
  std::string name() const override;
  void update(const at::Tensor& outputs, const at::Tensor& targets) override;
  double compute() const override;
  void reset() override;
  std::vector<double> sums() const override;
  void set_sums(const std::vector<double>& sums) override;

 private:
  Score score_;
  Average average_;
  TaskKind task_;
  at::Tensor counts_;  // [classes, 3] int64 on the outputs' device: true positives, predicted, true
  bool multilabel_ = false;
};

// The confusion matrix, rows the true class and columns the predicted one (scikit-learn's
// confusion_matrix with labels 0..C-1): a table. One yes/no output is two classes (0, 1).
class ConfusionMatrix : public Metric {
 public:
  explicit ConfusionMatrix(TaskKind task) : task_(task) {}
  std::string name() const override { return "confusion_matrix"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets) override;
  double compute() const override;
  void reset() override;
  std::vector<double> sums() const override;
  void set_sums(const std::vector<double>& sums) override;
  bool is_table() const override { return true; }
  std::vector<std::vector<double>> table() const override;

 private:
  TaskKind task_;
  at::Tensor counts_;  // [C * C] int64 on the outputs' device
};

// The area under the ROC curve, as scikit-learn's roc_auc_score: of the logit for one yes/no output;
// the mean over labels (multi-label) or over classes one-vs-rest on the softmax probabilities
// (macro), counting only classes with both positives and negatives (scikit-learn refuses the
// others; none: NaN). Bounded memory: each class keeps its distinct scores with how many positives
// and negatives had each, exactly (equal to scikit-learn) up to kMaxScores distinct scores over all
// classes; past that a class's scores are rounded to fewer significant bits, 4 at a time (pairs
// that round together count as ties, half right, as scikit-learn counts equal scores), so memory
// stays under kMaxScores entries of 24 bytes (100 MB).
class Auroc : public Metric {
 public:
  static constexpr std::size_t kMaxScores = std::size_t{1} << 22;
  explicit Auroc(TaskKind task, std::size_t max_scores = kMaxScores);
  ~Auroc() override;
  std::string name() const override { return "auroc"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets) override;
  double compute() const override;
  void reset() override;
  std::vector<double> sums() const override;
  void set_sums(const std::vector<double>& sums) override;
  bool concatenated() const override { return true; }
  // The distinct scores kept, over every class (at most max_scores once merged).
  std::size_t stored_scores() const;

  struct Scores;  // one class's

 private:
  void flush() const;
  TaskKind task_;
  std::size_t max_scores_;
  mutable std::vector<Scores> classes_;
};

// Regression metrics as scikit-learn computes them over outputs and targets [N, K] (uniform
// average over the K outputs): mean squared error, mean absolute error, R² (1 - SSE / SST, a
// constant target giving 1 when predicted exactly and 0 otherwise).
class RegressionMetric : public Metric {
 public:
  enum class Kind { kMse, kMae, kR2 };
  explicit RegressionMetric(Kind kind) : kind_(kind) {}
  std::string name() const override;
  void update(const at::Tensor& outputs, const at::Tensor& targets) override;
  double compute() const override;
  void reset() override;
  std::vector<double> sums() const override;
  void set_sums(const std::vector<double>& sums) override;

 private:
  Kind kind_;
  at::Tensor sums_;  // float64 on the outputs' device: [n, then for each output: Σy, Σy², SSE, SAE]
};

}  // namespace baton
