#include "baton/models/loss.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/core/options.h"
#include "baton/models/model.h"

namespace baton {
namespace {

namespace F = torch::nn::functional;

struct Kind {
  const char* name;
  TaskKind task;
};

constexpr Kind kKinds[] = {{"cross_entropy", TaskKind::kClasses},
                           {"binary_cross_entropy", TaskKind::kBinary},
                           {"mse", TaskKind::kRegression},
                           {"l1", TaskKind::kRegression},
                           {"smooth_l1", TaskKind::kRegression}};

std::string shape(const at::Tensor& t) { return c10::str(t.sizes()); }

// Each element's loss, the targets prepared: [N, K].
at::Tensor elementwise(const Loss& loss, const at::Tensor& outputs, const at::Tensor& targets) {
  const std::string& name = loss.name();
  if (name == "binary_cross_entropy") {
    return F::binary_cross_entropy_with_logits(outputs, targets,
                                               F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone));
  }
  if (name == "mse") return F::mse_loss(outputs, targets, F::MSELossFuncOptions().reduction(torch::kNone));
  if (name == "l1") return F::l1_loss(outputs, targets, F::L1LossFuncOptions().reduction(torch::kNone));
  return F::smooth_l1_loss(outputs, targets, F::SmoothL1LossFuncOptions().reduction(torch::kNone), loss.beta());
}

}  // namespace

Loss Loss::named(const std::string& name, double beta) {
  if (!(beta >= 0.0) || !std::isfinite(beta)) {
    throw std::invalid_argument("loss " + name + ": beta must be a finite number of at least 0, got " +
                                std::to_string(beta));
  }
  for (const Kind& kind : kKinds) {
    if (name == kind.name) {
      Loss loss;
      loss.name_ = name;
      loss.task_ = kind.task;
      loss.beta_ = beta;
      return loss;
    }
  }
  throw std::invalid_argument(unknown_name("loss", name, names()));
}

std::vector<std::string> Loss::names() {
  std::vector<std::string> out;
  out.reserve(std::size(kKinds));
  for (const Kind& kind : kKinds) out.emplace_back(kind.name);
  return out;
}

std::vector<std::string> Loss::default_metrics() const {
  if (task_ == TaskKind::kRegression) return {"mae", "loss"};
  return {"accuracy", "loss"};
}

at::Tensor Loss::prepare_targets(const at::Tensor& outputs, const at::Tensor& targets) const {
  if (task_ == TaskKind::kClasses) return targets;
  const auto type = outputs.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  if (outputs.dim() != 2) {
    throw std::invalid_argument("loss " + name_ + " takes outputs [N, K], got " + shape(outputs));
  }
  const int64_t k = outputs.size(1);
  if (task_ == TaskKind::kBinary && targets.dim() == 1 && !at::isFloatingType(targets.scalar_type()) && k > 1) {
    return F::one_hot(targets, k).to(type);  // class indices: one yes/no a class
  }
  if (targets.size(0) != outputs.size(0) || targets.numel() != outputs.numel()) {
    throw std::invalid_argument("loss " + name_ + ": outputs " + shape(outputs) + " and targets " + shape(targets) +
                                " do not fit (targets [N] need 1 output, [N, K] need K)");
  }
  return targets.reshape(outputs.sizes()).to(type);
}

at::Tensor Loss::operator()(const at::Tensor& outputs, const at::Tensor& targets) const {
  if (task_ == TaskKind::kClasses) return soft_cross_entropy(outputs, targets);
  return elementwise(*this, outputs, prepare_targets(outputs, targets)).mean();
}

at::Tensor Loss::per_example(const at::Tensor& outputs, const at::Tensor& targets) const {
  if (task_ == TaskKind::kClasses) return soft_cross_entropy_per_example(outputs, targets);
  return elementwise(*this, outputs, prepare_targets(outputs, targets)).mean(1);
}

}  // namespace baton
