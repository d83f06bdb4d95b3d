#include "optim/fused_adam.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <torch/torch.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define BATON_FUSED_ADAM 1
#endif

namespace baton::detail {

bool fused_adam_built() {
#ifdef BATON_FUSED_ADAM
  return true;
#else
  return false;
#endif
}

at::Tensor& FusedSteps::of(const at::Tensor& parameter, int64_t step) {
  Count& count = counts_[parameter.unsafeGetTensorImpl()];
  if (!count.tensor.defined() || count.tensor.device() != parameter.device()) {
    count.tensor = torch::zeros({}, parameter.options().dtype(at::kFloat));
    count.step = 0;
  }
  if (count.step != step) count.tensor.fill_(static_cast<double>(step));
  count.step = step + 1;  // the kernels take the count after this step's increment
  return count.tensor;
}

#ifdef BATON_FUSED_ADAM
namespace {

// The tensors of one kernel call: a group's parameters of one device and type. The CPU's kernel walks
// each tensor's memory in order, so a parameter whose gradient or moments are laid out otherwise
// (a channels-last weight with a gradient or a loaded moment in the default layout) goes in as
// contiguous copies, written back after: `copied` pairs each copy with its tensor.
struct Lists {
  std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
  std::vector<std::pair<at::Tensor, at::Tensor>> copied;

  at::Tensor in(const at::Tensor& t, bool copy, bool written) {
    if (!copy) return t;
    at::Tensor c = t.contiguous().clone();
    if (written) copied.emplace_back(t, c);
    return c;
  }
};

// Whether the kernel may walk these tensors' memory as one another's: the same strides, dense.
bool one_layout(const std::vector<at::Tensor>& tensors) {
  for (const auto& t : tensors) {
    if (!t.is_non_overlapping_and_dense() || t.strides() != tensors.front().strides()) return false;
  }
  return true;
}

bool applies(const at::Tensor& p) {
  return !p.grad().is_sparse() && (p.device().is_cpu() || p.device().is_cuda()) && p.is_floating_point() &&
         p.grad().scalar_type() == p.scalar_type();
}

// LibTorch's Adam and AdamW state for `p`, made as their step makes it on the first step.
template <class State>
State& state_of(torch::optim::Optimizer& optimizer, const at::Tensor& p, bool amsgrad) {
  auto& slot = optimizer.state()[p.unsafeGetTensorImpl()];
  if (!slot) {
    auto state = std::make_unique<State>();
    state->step(0);
    state->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
    state->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
    if (amsgrad) state->max_exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
    slot = std::move(state);
  }
  return static_cast<State&>(*slot);
}

template <class Options, class State>
void step_group(torch::optim::Optimizer& optimizer, torch::optim::OptimizerParamGroup& group, bool decoupled,
                FusedSteps& steps) {
  const auto& o = static_cast<const Options&>(group.options());
  std::map<std::tuple<std::string, int>, Lists> by_kind;
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    State& s = state_of<State>(optimizer, p, o.amsgrad());
    Lists& l = by_kind[{p.device().str(), static_cast<int>(p.scalar_type())}];
    std::vector<at::Tensor> all = {p, p.grad(), s.exp_avg(), s.exp_avg_sq()};
    if (o.amsgrad()) all.push_back(s.max_exp_avg_sq());
    const bool copy = !one_layout(all);
    l.params.push_back(l.in(p, copy, true));
    l.grads.push_back(l.in(p.grad(), copy, false));
    l.exp_avgs.push_back(l.in(s.exp_avg(), copy, true));
    l.exp_avg_sqs.push_back(l.in(s.exp_avg_sq(), copy, true));
    if (o.amsgrad()) l.max_exp_avg_sqs.push_back(l.in(s.max_exp_avg_sq(), copy, true));
    l.steps.push_back(steps.of(p, s.step()));
    s.step(s.step() + 1);
  }
  const auto [beta1, beta2] = o.betas();
  for (auto& [kind, l] : by_kind) {
    torch::_foreach_add_(l.steps, 1);
    if (decoupled) {
      at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps, o.lr(), beta1, beta2,
                        o.weight_decay(), o.eps(), o.amsgrad(), /*maximize=*/false);
    } else {
      at::_fused_adam_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps, o.lr(), beta1, beta2,
                       o.weight_decay(), o.eps(), o.amsgrad(), /*maximize=*/false);
    }
    for (auto& [tensor, copy] : l.copied) tensor.copy_(copy);
  }
}

}  // namespace

bool fused_adam_step(torch::optim::Optimizer& optimizer, bool decoupled, FusedSteps& steps) {
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      if (p.grad().defined() && !applies(p)) return false;
    }
  }
  torch::NoGradGuard no_grad;
  for (auto& group : optimizer.param_groups()) {
    if (decoupled) {
      step_group<torch::optim::AdamWOptions, torch::optim::AdamWParamState>(optimizer, group, true, steps);
    } else {
      step_group<torch::optim::AdamOptions, torch::optim::AdamParamState>(optimizer, group, false, steps);
    }
  }
  return true;
}
#else
bool fused_adam_step(torch::optim::Optimizer&, bool, FusedSteps&) { return false; }
#endif

}  // namespace baton::detail
