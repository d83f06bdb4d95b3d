#include "baton/models/loss.h"

#include <cmath>
#include <memory>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/core/options.h"
#include "baton/core/registry.h"
#include "baton/models/model.h"

namespace baton {
namespace {

namespace F = torch::nn::functional;

std::string shape(const at::Tensor& t) { return c10::str(t.sizes()); }

// What a name computes: the task it serves and each element's loss (outputs and prepared targets
// [N, K], `beta` for smooth_l1); cross_entropy's is soft_cross_entropy, over classes.
struct LossKind {
  TaskKind task = TaskKind::kClasses;
  at::Tensor (*elementwise)(const at::Tensor& outputs, const at::Tensor& targets, double beta) = nullptr;
};
using Losses = Registry<LossKind>;

const Losses& loss_registry() {
  static const Losses table(
      "loss", Losses::Order::kRegistration,
      {{"cross_entropy", [] { return LossKind{}; }},
       {"binary_cross_entropy",
        [] {
          return LossKind{TaskKind::kBinary, [](const at::Tensor& o, const at::Tensor& t, double) {
                            return F::binary_cross_entropy_with_logits(
                                o, t, F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone));
                          }};
        }},
       {"mse",
        [] {
          return LossKind{TaskKind::kRegression, [](const at::Tensor& o, const at::Tensor& t, double) {
                            return F::mse_loss(o, t, F::MSELossFuncOptions().reduction(torch::kNone));
                          }};
        }},
       {"l1",
        [] {
          return LossKind{TaskKind::kRegression, [](const at::Tensor& o, const at::Tensor& t, double) {
                            return F::l1_loss(o, t, F::L1LossFuncOptions().reduction(torch::kNone));
                          }};
        }},
       {"smooth_l1", [] {
          return LossKind{TaskKind::kRegression, [](const at::Tensor& o, const at::Tensor& t, double beta) {
                            return F::smooth_l1_loss(o, t, F::SmoothL1LossFuncOptions().reduction(torch::kNone), beta);
                          }};
        }}});
  return table;
}

}  // namespace

struct Loss::Impl {
  std::string name_ = "cross_entropy";
  TaskKind task_ = TaskKind::kClasses;
  double beta_ = 1.0;
  // Each element's loss (not cross_entropy's): the registered function of the name.
  at::Tensor (*elementwise_)(const at::Tensor&, const at::Tensor&, double) = nullptr;
};

Loss::Loss() : impl_(std::make_unique<Impl>()) {}
Loss::~Loss() = default;
Loss::Loss(const Loss& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
Loss& Loss::operator=(const Loss& other) {
  if (this != &other) impl_ = std::make_unique<Impl>(*other.impl_);  // also into a moved-from loss
  return *this;
}
Loss::Loss(Loss&& other) noexcept = default;
Loss& Loss::operator=(Loss&& other) noexcept = default;

const std::string& Loss::name() const { return impl_->name_; }
double Loss::beta() const { return impl_->beta_; }
TaskKind Loss::task() const { return impl_->task_; }
bool Loss::float_targets() const { return impl_->task_ != TaskKind::kClasses; }

Loss Loss::named(const std::string& name, double beta) {
  if (!(beta >= 0.0) || !std::isfinite(beta)) {
    throw std::invalid_argument("loss " + name + ": beta must be a finite number of at least 0, got " +
                                std::to_string(beta));
  }
  const LossKind kind = loss_registry().make(name);
  Loss loss;
  loss.impl_->name_ = name;
  loss.impl_->task_ = kind.task;
  loss.impl_->beta_ = beta;
  loss.impl_->elementwise_ = kind.elementwise;
  return loss;
}

std::vector<std::string> Loss::names() { return loss_registry().names(); }

std::vector<std::string> Loss::default_metrics() const {
  if (impl_->task_ == TaskKind::kRegression) return {"mae", "loss"};
  return {"accuracy", "loss"};
}

at::Tensor Loss::prepare_targets(const at::Tensor& outputs, const at::Tensor& targets) const {
  if (impl_->task_ == TaskKind::kClasses) return targets;
  const auto type = outputs.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  if (outputs.dim() != 2) {
    throw std::invalid_argument("loss " + impl_->name_ + " takes outputs [N, K], got " + shape(outputs));
  }
  const int64_t k = outputs.size(1);
  if (impl_->task_ == TaskKind::kBinary && targets.dim() == 1 && !at::isFloatingType(targets.scalar_type()) && k > 1) {
    return F::one_hot(targets, k).to(type);  // class indices: one yes/no a class
  }
  if (targets.size(0) != outputs.size(0) || targets.numel() != outputs.numel()) {
    throw std::invalid_argument("loss " + impl_->name_ + ": outputs " + shape(outputs) + " and targets " +
                                shape(targets) + " do not fit (targets [N] need 1 output, [N, K] need K)");
  }
  return targets.reshape(outputs.sizes()).to(type);
}

at::Tensor Loss::operator()(const at::Tensor& outputs, const at::Tensor& targets) const {
  if (impl_->task_ == TaskKind::kClasses) return soft_cross_entropy(outputs, targets);
  return impl_->elementwise_(outputs, prepare_targets(outputs, targets), impl_->beta_).mean();
}

at::Tensor Loss::per_example(const at::Tensor& outputs, const at::Tensor& targets) const {
  if (impl_->task_ == TaskKind::kClasses) return soft_cross_entropy_per_example(outputs, targets);
  return impl_->elementwise_(outputs, prepare_targets(outputs, targets), impl_->beta_).mean(1);
}

}  // namespace baton
