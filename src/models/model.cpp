#include "baton/models/model.h"

#include <stdexcept>
#include <utility>

#include <torch/torch.h>

namespace baton {

Classifier::Classifier(torch::nn::AnyModule module) : module_(std::move(module)) {
  register_module("module", module_.ptr());
}

at::Tensor Classifier::forward(const Batch& batch) { return module_.forward(batch.input); }

at::Tensor Classifier::loss(const at::Tensor& outputs, const Batch& batch) {
  return loss_function()(outputs, batch.target);
}

namespace {

// "torch::nn::Conv2dImpl" -> "Conv2d", "baton::FashionCnnImpl" -> "FashionCnn".
std::string short_type(std::string type) {
  if (const auto colon = type.rfind("::"); colon != std::string::npos) type = type.substr(colon + 2);
  if (type.size() > 4 && type.compare(type.size() - 4, 4, "Impl") == 0) type.resize(type.size() - 4);
  return type;
}

std::pair<int64_t, int64_t> count_parameters(const torch::nn::Module& module) {
  int64_t all = 0;
  int64_t trainable = 0;
  for (const auto& p : module.parameters(/*recurse=*/true)) {
    all += p.numel();
    if (p.requires_grad()) trainable += p.numel();
  }
  return {all, trainable};
}

}  // namespace

std::vector<ModelPart> Model::parts() const {
  const torch::nn::Module* top = this;
  // Through wrappers: one child and no tensors of their own.
  while (top->children().size() == 1 && top->named_parameters(/*recurse=*/false).is_empty()) {
    top = top->children().front().get();
  }
  std::vector<ModelPart> out;
  for (const auto& child : top->named_children()) {
    const auto [all, trainable] = count_parameters(*child.value());
    out.push_back(ModelPart{child.key(), short_type(child.value()->name()), all, trainable});
  }
  if (out.empty()) {
    const auto [all, trainable] = count_parameters(*top);
    out.push_back(ModelPart{"(model)", short_type(top->name()), all, trainable});
  }
  return out;
}

at::Tensor Model::loss_per_example(const at::Tensor& /*outputs*/, const Batch& /*batch*/) {
  throw std::logic_error(name() + " has no per-example loss (override Model::loss_per_example)");
}

at::Tensor Classifier::loss_per_example(const at::Tensor& outputs, const Batch& batch) {
  return loss_function().per_example(outputs, batch.target);
}

at::Tensor soft_cross_entropy_per_example(const at::Tensor& sequence_logits, const at::Tensor& sequence_targets) {
  if (sequence_logits.dim() == 3) {  // a sequence's loss is the mean of its positions'
    const auto [logits, targets] = positions_as_rows(sequence_logits, sequence_targets);
    return soft_cross_entropy_per_example(logits, targets).view({sequence_logits.size(0), -1}).mean(1);
  }
  const at::Tensor& logits = sequence_logits;
  const at::Tensor& targets = sequence_targets;
  if (targets.dim() == logits.dim() && at::isFloatingType(targets.scalar_type())) {
    return -(targets * torch::log_softmax(logits, 1)).sum(1);
  }
  return torch::nn::functional::cross_entropy(logits, targets,
                                              torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
}

at::Tensor soft_cross_entropy(const at::Tensor& sequence_logits, const at::Tensor& sequence_targets) {
  const auto [logits, targets] = positions_as_rows(sequence_logits, sequence_targets);
  if (targets.dim() == logits.dim() && at::isFloatingType(targets.scalar_type())) {
    return -(targets * torch::log_softmax(logits, 1)).sum(1).mean();
  }
  return torch::nn::functional::cross_entropy(logits, targets);
}

}  // namespace baton
