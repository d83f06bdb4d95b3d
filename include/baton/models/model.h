// Model: what the Trainer trains. A torch::nn::Module that also knows its loss.
//
//   auto net = std::make_shared<MyNetImpl>();                  // any module with forward(Tensor)
//   auto model = std::make_shared<baton::Classifier>(net);      // cross-entropy, accuracy
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>

#include "baton/core/state.h"
#include "baton/core/task.h"
#include "baton/models/loss.h"

namespace baton {

// A top-level part of a model, as a summary lists it.
struct ModelPart {
  std::string name;
  std::string type;
  int64_t parameters = 0;
  int64_t trainable = 0;
};

class Model : public torch::nn::Module {
 public:
  // The outputs for a training batch.
  virtual at::Tensor forward(const Batch& batch) = 0;
  // The loss of `outputs` against the batch's targets (a scalar).
  virtual at::Tensor loss(const at::Tensor& outputs, const Batch& batch) = 0;
  // Each example's loss (a vector of the batch's size), for algorithms that rank examples
  // (selective backprop). Default: throws std::logic_error.
  virtual at::Tensor loss_per_example(const at::Tensor& outputs, const Batch& batch);
  // The outputs for an evaluation or prediction batch. Default: forward(batch).
  virtual at::Tensor eval_forward(const Batch& batch) { return forward(batch); }
  // The metrics it is evaluated with (names for make_metric). Default: the loss function's
  // (accuracy and loss for classes, mae and loss for values).
  virtual std::vector<std::string> metrics() const { return loss_function_.default_metrics(); }

  // The loss function a Classifier or a TorchScript model trains with (recipe key `loss`), and
  // what its outputs are. Default: cross-entropy over class logits. A model written with its own
  // loss() keeps the default unless it sets one.
  const Loss& loss_function() const { return loss_function_; }
  virtual void set_loss_function(Loss loss) { loss_function_ = std::move(loss); }
  TaskKind task() const { return loss_function_.task(); }

  // Its top-level modules with their parameter counts, for a summary. Default: the children,
  // looking through wrappers of one child (a Classifier's module, a Sequential of one).
  virtual std::vector<ModelPart> parts() const;

 private:
  Loss loss_function_;
};

// A model around any module whose forward takes and returns one tensor, trained with its
// loss_function(): cross-entropy unless set (targets class indices or, when an algorithm made them
// so (label smoothing, MixUp), per-class probabilities of the outputs' shape), or any other Loss.
class Classifier : public Model {
 public:
  explicit Classifier(torch::nn::AnyModule module);
  template <typename ModuleType>
  explicit Classifier(std::shared_ptr<ModuleType> module) : Classifier(torch::nn::AnyModule(std::move(module))) {}

  at::Tensor forward(const Batch& batch) override;
  at::Tensor loss(const at::Tensor& outputs, const Batch& batch) override;
  at::Tensor loss_per_example(const at::Tensor& outputs, const Batch& batch) override;

  // The wrapped module (registered as the child "module").
  torch::nn::AnyModule& module() { return module_; }

 private:
  torch::nn::AnyModule module_;
};

// A TorchScript module (torch.jit.save in Python, or torch::jit::Module::save) trained in C++ with
// its loss_function(): its parameters become this module's, so optimizers, checkpoints and
// algorithms see them. Throws std::runtime_error naming the file when it cannot be loaded.
std::shared_ptr<Model> load_torchscript_classifier(const std::string& path);

// Cross-entropy of logits against class indices or per-class probabilities: the mean, and each
// example's. Sequences (logits [N, T, classes]): the mean over every position, and each sequence's
// mean.
at::Tensor soft_cross_entropy(const at::Tensor& logits, const at::Tensor& targets);
at::Tensor soft_cross_entropy_per_example(const at::Tensor& logits, const at::Tensor& targets);

}  // namespace baton
