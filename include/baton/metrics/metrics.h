// Metrics accumulated over batches of uneven size and computed once: accuracy, top-k accuracy,
// cross-entropy. The sums stay on the outputs' device until compute() (or sums()) reads them: an
// evaluation on a GPU waits for the device once, at its end, not once per batch.
//
//   baton::Accuracy acc;
//   for (...) acc.update(logits, targets);
//   double value = acc.compute();  // correct / seen, over every example
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

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
  // Default: none (a metric without them is computed on each rank's share alone).
  virtual std::vector<double> sums() const { return {}; }
  virtual void set_sums(const std::vector<double>& /*sums*/) {}
};

class Accuracy : public Metric {
 public:
  std::string name() const override { return "accuracy"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets) override;
  double compute() const override;
  void reset() override;
  std::vector<double> sums() const override;
  void set_sums(const std::vector<double>& sums) override;

 protected:
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

// The mean cross-entropy per example.
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

// A metric by name (metric_names(): accuracy, top<k>_accuracy as top5_accuracy, loss). Throws
// std::invalid_argument for an unknown name, naming the known ones.
std::unique_ptr<Metric> make_metric(const std::string& name);

// The names make_metric knows, a family written with its parameter (top<k>_accuracy).
std::vector<std::string> metric_names();

}  // namespace baton
