// Metrics accumulated over batches of uneven size and computed once: accuracy, top-k accuracy, the
// loss, precision, recall, F1, AUROC, MSE, MAE, R², perplexity and the confusion matrix, each equal
// to scikit-learn's on the same predictions. The sums stay on the outputs' device until compute()
// (or sums()) reads them: an evaluation on a GPU waits for the device once, at its end, not once
// per batch (AUROC, which keeps its scores on the host, excepted).
//
//   auto acc = baton::make_metric("accuracy");
//   for (...) acc->update(logits, targets);
//   double value = acc->compute();  // correct / seen, over every example
//
// The kinds are in src/metrics/kinds.h; a user's own metric derives from Metric.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "baton/core/task.h"

namespace baton {

class Metric {
 public:
  virtual ~Metric() = default;
  // "accuracy", "top5_accuracy", "loss": the trainer logs "<label>/<name>".
  virtual std::string name() const = 0;
  // `outputs` are logits [N, classes]; `targets` class indices [N] or probabilities [N, classes].
  // Sequences (logits [N, T, classes], targets [N, T]) count each position as an example.
  virtual void update(const at::Tensor& outputs, const at::Tensor& targets) = 0;
  // Throws std::logic_error when nothing was seen. Reads the device's sums (a wait for it).
  virtual double compute() const = 0;
  virtual void reset() = 0;
  // What compute() is made of, as sums: data parallelism adds every rank's before compute().
  // Default: none (a metric without them is computed on each rank's share alone). A rank that saw
  // fewer classes may give fewer sums: the shorter lists are padded with zeros before adding.
  virtual std::vector<double> sums() const { return {}; }
  virtual void set_sums(const std::vector<double>& /*sums*/) {}
  // A metric whose state cannot be added (AUROC's scores): sums() is its state, which data
  // parallelism concatenates over the ranks instead (set_sums gets every rank's, one after another).
  virtual bool concatenated() const { return false; }
  // A metric that is a table, not a number (confusion_matrix): its rows, written as a file in the
  // run directory; compute() then gives the number of examples seen.
  virtual bool is_table() const { return false; }
  virtual std::vector<std::vector<double>> table() const { return {}; }
};

// What make_metric needs to know of the model: what its outputs are, and its loss.
struct MetricContext {
  TaskKind task = TaskKind::kClasses;
  // Each example's loss, (outputs, targets) -> [N]: what "loss" averages. Unset: cross-entropy.
  std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> loss_per_example;
  std::string loss_name = "cross_entropy";  // named in the message of a metric that does not fit
};

// A metric by name (metric_names()) for a model of `context.task`: accuracy, top<k>_accuracy as
// top5_accuracy, loss, precision, recall and f1 (each also as NAME_macro, NAME_micro, NAME_binary;
// the plain name is binary for one yes/no output, macro otherwise), auroc, mse, mae, r2,
// perplexity, confusion_matrix. Throws std::invalid_argument for an unknown name, naming the known
// ones, and for a metric that does not fit the task (r2 on classes, accuracy on regression), saying
// which do.
std::unique_ptr<Metric> make_metric(const std::string& name, const MetricContext& context = {});

// The names make_metric knows, a family written with its parameter (top<k>_accuracy).
std::vector<std::string> metric_names();

}  // namespace baton
