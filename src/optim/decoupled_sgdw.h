// The optimizer "decoupled_sgdw" (make_optimizer), for src/optim's own use (the capturable step
// reads its weight decay). Private to src/optim.
#pragma once

#include <vector>

#include <torch/optim/sgd.h>
#include <torch/utils.h>

namespace baton::detail {

// SGD whose weight decay is decoupled from the gradient and scaled by lr / initial lr
// (Loshchilov & Hutter; Composer's DecoupledSGDW).
class DecoupledSGDW : public torch::optim::SGD {
 public:
  DecoupledSGDW(std::vector<at::Tensor> params, torch::optim::SGDOptions options, double weight_decay)
      : torch::optim::SGD(std::move(params), options), weight_decay_(weight_decay), initial_lr_(options.lr()) {}
  // Over other parameter groups, with `like`'s decay and initial rate (a shard of its parameters).
  DecoupledSGDW(const std::vector<torch::optim::OptimizerParamGroup>& groups, const DecoupledSGDW& like)
      : torch::optim::SGD(groups, static_cast<const torch::optim::SGDOptions&>(like.defaults())),
        weight_decay_(like.weight_decay_),
        initial_lr_(like.initial_lr_) {}

  at::Tensor step(LossClosure closure = nullptr) override {
    if (weight_decay_ != 0.0) {
      torch::NoGradGuard no_grad;
      for (auto& group : param_groups()) {
        const double lr = static_cast<torch::optim::SGDOptions&>(group.options()).lr();
        const double decay = 1.0 - weight_decay_ * lr / initial_lr_;
        for (auto& p : group.params()) {
          if (p.grad().defined()) p.mul_(decay);
        }
      }
    }
    return torch::optim::SGD::step(std::move(closure));
  }

  double weight_decay() const { return weight_decay_; }
  double initial_lr() const { return initial_lr_; }

 private:
  double weight_decay_;
  double initial_lr_;
};

}  // namespace baton::detail
