// Loss: what a model trains to lower, by name (the recipe's `loss:` key), as PyTorch computes it.
//
//   cross_entropy          class logits [N, C] (or [N, T, C]) against class indices [N] or per-class
//                          probabilities [N, C]                                  (F.cross_entropy)
//   binary_cross_entropy   logits [N, K] against 0/1 values [N, K]; class indices [N] are one-hot
//                          encoded (K = 1: the index itself)      (F.binary_cross_entropy_with_logits)
//   mse, l1, smooth_l1     values [N, K] against values [N, K] ([N] when K = 1)
//                          (F.mse_loss, F.l1_loss, F.smooth_l1_loss with `beta`)
//
// The mean is PyTorch's reduction="mean" (over every element); per_example is each example's mean
// over its K values (a sequence's over its positions), so its mean is the mean.
//
//   baton::Loss loss = baton::Loss::named("smooth_l1", /*beta=*/0.5);
//   at::Tensor l = loss(outputs, targets);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "baton/core/task.h"

namespace baton {

class Loss {
 public:
  Loss();  // cross_entropy
  ~Loss();
  Loss(const Loss& other);
  Loss& operator=(const Loss& other);
  Loss(Loss&& other) noexcept;
  Loss& operator=(Loss&& other) noexcept;

  // Throws std::invalid_argument for an unknown name (listing the known ones) or a negative beta.
  static Loss named(const std::string& name, double beta = 1.0);
  static std::vector<std::string> names();

  const std::string& name() const;
  double beta() const;
  // What it compares: class logits (cross_entropy), yes/no logits (binary_cross_entropy), values.
  TaskKind task() const;
  // Whether the targets are values (read as float from a data set), not class indices.
  bool float_targets() const;
  // The metrics a model trained with it is evaluated with when a recipe names none.
  std::vector<std::string> default_metrics() const;

  at::Tensor operator()(const at::Tensor& outputs, const at::Tensor& targets) const;
  at::Tensor per_example(const at::Tensor& outputs, const at::Tensor& targets) const;
  // `targets` as this loss compares them with `outputs` (float, the outputs' shape; class indices
  // one-hot for binary_cross_entropy). Throws std::invalid_argument when they cannot fit: the
  // message gives both shapes.
  at::Tensor prepare_targets(const at::Tensor& outputs, const at::Tensor& targets) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
