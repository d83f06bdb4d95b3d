// Optimizers by name: sgd, adam, adamw, decoupled_sgdw.
//
//   baton::OptimizerOptions spec;  spec.name("sgd"); spec.lr(0.05); spec.momentum(0.9); spec.nesterov(true);
//   auto optimizer = baton::make_optimizer(spec, model->parameters());
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "baton/core/options.h"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace baton {

class OptimizerOptions {
  BATON_ARG(std::string, name) = "sgd";
  BATON_ARG(double, lr) = 0.1;            // Default: 0.1
  BATON_ARG(double, momentum) = 0.0;      // sgd, decoupled_sgdw. Default: 0
  BATON_ARG(double, dampening) = 0.0;     // sgd, decoupled_sgdw. Default: 0
  BATON_ARG(bool, nesterov) = false;      // sgd, decoupled_sgdw. Default: false
  BATON_ARG(double, weight_decay) = 0.0;  // Default: 0
  BATON_ARG(double, beta1) = 0.9;         // adam, adamw. Default: 0.9
  BATON_ARG(double, beta2) = 0.999;       // adam, adamw. Default: 0.999
  BATON_ARG(double, eps) = 1e-8;          // adam, adamw. Default: 1e-8
  // adam, adamw: the step as one fused kernel per device and type (torch.optim.AdamW(fused=True);
  // LibTorch 2.4 or later), the same state and, to rounding, the same result. Default: when built.
  BATON_ARG(std::optional<bool>, fused);
};

// Throws std::invalid_argument for an unknown name (listing the known ones) or a bad value.
std::shared_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerOptions& spec,
                                                        std::vector<at::Tensor> parameters);

std::vector<std::string> optimizer_names();

// The name make_optimizer knows `optimizer` by ("sgd", "adam", ...), or its C++ type's name for
// another one: what a checkpoint records, so that a resume with another optimizer is refused.
std::string optimizer_kind(const torch::optim::Optimizer& optimizer);

// An optimizer of `like`'s kind (one make_optimizer makes) over other parameter groups, each with
// the options of `like`'s group of the same index (a shard of its parameters: sharded training).
// Throws std::invalid_argument for another kind, or a different number of groups.
std::shared_ptr<torch::optim::Optimizer> make_optimizer_like(const torch::optim::Optimizer& like,
                                                             std::vector<std::vector<at::Tensor>> groups);

// The bytes of `optimizer`'s state tensors (momentum, Adam's moments) as they are now: none before
// its first step. The state of an optimizer make_optimizer does not make counts as its serialised
// size.
int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer);

// The state `optimizer` (one make_optimizer makes) holds for `parameter`, as named tensors: sgd's
// and decoupled_sgdw's "momentum_buffer"; adam's and adamw's "step" (an int64 scalar), "exp_avg",
// "exp_avg_sq" and (amsgrad) "max_exp_avg_sq"; empty before the parameter's first step. Sharded
// training cuts these into shards and joins them again. Throws std::invalid_argument for another
// kind of optimizer.
std::map<std::string, at::Tensor> optimizer_param_state(const torch::optim::Optimizer& optimizer,
                                                        const at::Tensor& parameter);
// Makes `state` (named as optimizer_param_state names them) the state `optimizer` holds for
// `parameter`; an empty map removes it.
void set_optimizer_param_state(torch::optim::Optimizer& optimizer, const at::Tensor& parameter,
                               const std::map<std::string, at::Tensor>& state);

}  // namespace baton
