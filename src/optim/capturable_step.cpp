#include "baton/optim/capturable_step.h"

#include <cmath>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include <torch/torch.h>

#include "optim/builders.h"
#include "optim/decoupled_sgdw.h"

namespace baton {
namespace detail {
enum class StepKind { kSgd, kAdam, kAdamW };
}  // namespace detail

namespace {

using Kind = detail::StepKind;

// A parameter's optimizer state; nullptr when it has none yet.
template <typename StateMap>
torch::optim::OptimizerParamState* find_state(StateMap& state, const at::Tensor& p) {
  auto it = state.find(param_state_key<StateMap>(p));
  return it == state.end() ? nullptr : it->second.get();
}

int64_t adam_step(Kind kind, torch::optim::OptimizerParamState* state) {
  return kind == Kind::kAdam ? static_cast<torch::optim::AdamParamState*>(state)->step()
                             : static_cast<torch::optim::AdamWParamState*>(state)->step();
}

void require_capturable(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("no capturable optimizer step: " + what);
}

}  // namespace

// Per group, three device scalars: SGD: -lr, momentum, the decoupled weight decay's factor;
// Adam and AdamW: -lr / bias correction 1, sqrt(bias correction 2), AdamW's decay factor.
constexpr int64_t kScalars = 3;

struct CapturableGroup {
  std::size_t index = 0;  // in the optimizer's param_groups()
  detail::StepKind kind = detail::StepKind::kSgd;
  std::vector<at::Tensor> params;  // those with a gradient when the step was built
  std::vector<torch::optim::OptimizerParamState*> states;
  double decoupled_decay = 0.0;  // decoupled_sgdw: weight decay per unit of lr / initial lr
  double initial_lr = 1.0;
};

struct CapturableStep::Impl {
  std::shared_ptr<torch::optim::Optimizer> optimizer_;
  std::vector<CapturableGroup> groups_;
  at::Tensor scalars_;  // on the device: per group, kScalars values
};

CapturableStep::CapturableStep(std::shared_ptr<torch::optim::Optimizer> optimizer) : impl_(std::make_unique<Impl>()) {
  impl_->optimizer_ = std::move(optimizer);
  require_capturable(impl_->optimizer_ != nullptr, "no optimizer");
  auto& state = impl_->optimizer_->state();
  const auto* sgdw = dynamic_cast<const detail::DecoupledSGDW*>(impl_->optimizer_.get());
  for (std::size_t g = 0; g < impl_->optimizer_->param_groups().size(); ++g) {
    auto& group = impl_->optimizer_->param_groups()[g];
    CapturableGroup out;
    out.index = g;
    if (dynamic_cast<torch::optim::SGDOptions*>(&group.options()) != nullptr) {
      out.kind = Kind::kSgd;
      if (sgdw != nullptr) {
        out.decoupled_decay = sgdw->weight_decay();
        out.initial_lr = sgdw->initial_lr();
      }
    } else if (auto* adam = dynamic_cast<torch::optim::AdamOptions*>(&group.options())) {
      require_capturable(!adam->amsgrad(), "amsgrad");
      out.kind = Kind::kAdam;
    } else if (auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&group.options())) {
      require_capturable(!adamw->amsgrad(), "amsgrad");
      out.kind = Kind::kAdamW;
    } else {
      require_capturable(false, "the optimizer is not one of sgd, decoupled_sgdw, adam, adamw");
    }
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto* s = find_state(state, p);
      const bool momentum =
          out.kind == Kind::kSgd && static_cast<torch::optim::SGDOptions&>(group.options()).momentum() != 0.0;
      require_capturable(s != nullptr || (out.kind == Kind::kSgd && !momentum),
                         "parameter group " + std::to_string(g) + " has not taken an eager step yet");
      if (out.kind != Kind::kSgd) {
        const int64_t step = adam_step(out.kind, s);
        require_capturable(out.params.empty() || step == adam_step(out.kind, out.states[0]),
                           "the parameters of group " + std::to_string(g) + " are at different Adam steps");
      }
      out.params.push_back(p);
      out.states.push_back(s);
    }
    impl_->groups_.push_back(std::move(out));
  }
  const at::Device device = impl_->groups_.empty() || impl_->groups_[0].params.empty()
                                ? at::Device(at::kCPU)
                                : impl_->groups_[0].params[0].device();
  impl_->scalars_ = torch::zeros({static_cast<int64_t>(impl_->groups_.size()), kScalars},
                                 torch::TensorOptions().dtype(torch::kFloat).device(device));
}

CapturableStep::~CapturableStep() = default;

void CapturableStep::prepare() {
  std::vector<float> values;
  for (auto& g : impl_->groups_) {
    auto& options = impl_->optimizer_->param_groups()[g.index].options();
    const double lr = options.get_lr();
    if (g.kind == Kind::kSgd) {
      const auto& sgd = static_cast<torch::optim::SGDOptions&>(options);
      values.insert(values.end(), {static_cast<float>(-lr), static_cast<float>(sgd.momentum()),
                                   static_cast<float>(1.0 - g.decoupled_decay * lr / g.initial_lr)});
      continue;
    }
    // The count in the state: eager steps may have been taken since this step was built.
    const int64_t step = g.states.empty() ? 1 : adam_step(g.kind, g.states[0]) + 1;
    for (auto* s : g.states) {
      if (g.kind == Kind::kAdam) static_cast<torch::optim::AdamParamState*>(s)->step(step);
      if (g.kind == Kind::kAdamW) static_cast<torch::optim::AdamWParamState*>(s)->step(step);
    }
    const auto [beta1, beta2] = g.kind == Kind::kAdam ? static_cast<torch::optim::AdamOptions&>(options).betas()
                                                      : static_cast<torch::optim::AdamWOptions&>(options).betas();
    const double bias1 = 1.0 - std::pow(beta1, static_cast<double>(step));
    const double bias2 = 1.0 - std::pow(beta2, static_cast<double>(step));
    const double decay =
        g.kind == Kind::kAdamW ? 1.0 - lr * static_cast<torch::optim::AdamWOptions&>(options).weight_decay() : 1.0;
    values.insert(values.end(),
                  {static_cast<float>(-lr / bias1), static_cast<float>(std::sqrt(bias2)), static_cast<float>(decay)});
  }
  at::Tensor host = torch::tensor(values, torch::kFloat).reshape(impl_->scalars_.sizes());
  // From pinned memory the copy neither waits nor lets the host change the values under it (the
  // caching host allocator keeps the block until the copy is done).
  if (impl_->scalars_.is_cuda()) host = host.pin_memory();
  impl_->scalars_.copy_(host, /*non_blocking=*/true);
}

void CapturableStep::run() {
  torch::NoGradGuard no_grad;
  for (std::size_t gi = 0; gi < impl_->groups_.size(); ++gi) {
    const CapturableGroup& g = impl_->groups_[gi];
    auto& options = impl_->optimizer_->param_groups()[g.index].options();
    const at::Tensor first = impl_->scalars_[static_cast<int64_t>(gi)][0];
    const at::Tensor second = impl_->scalars_[static_cast<int64_t>(gi)][1];
    const at::Tensor decay = impl_->scalars_[static_cast<int64_t>(gi)][2];
    for (std::size_t i = 0; i < g.params.size(); ++i) {
      at::Tensor p = g.params[i];
      const at::Tensor& grad = p.grad();
      if (g.kind == Kind::kSgd) {
        const auto& o = static_cast<torch::optim::SGDOptions&>(options);
        if (g.decoupled_decay != 0.0) p.mul_(decay);
        at::Tensor d_p = o.weight_decay() != 0.0 ? grad.add(p, o.weight_decay()) : grad;
        if (o.momentum() != 0.0) {
          at::Tensor buf = static_cast<torch::optim::SGDParamState*>(g.states[i])->momentum_buffer();
          buf.mul_(second).add_(d_p, 1.0 - o.dampening());
          d_p = o.nesterov() ? d_p.addcmul(buf, second) : buf;
        }
        p.addcmul_(d_p, first);  // p - lr * d_p
        continue;
      }
      const bool adamw = g.kind == Kind::kAdamW;
      const auto [beta1, beta2] = adamw ? static_cast<torch::optim::AdamWOptions&>(options).betas()
                                        : static_cast<torch::optim::AdamOptions&>(options).betas();
      const double eps = adamw ? static_cast<torch::optim::AdamWOptions&>(options).eps()
                               : static_cast<torch::optim::AdamOptions&>(options).eps();
      at::Tensor exp_avg, exp_avg_sq;
      at::Tensor d_p = grad;
      if (adamw) {
        auto* s = static_cast<torch::optim::AdamWParamState*>(g.states[i]);
        exp_avg = s->exp_avg();
        exp_avg_sq = s->exp_avg_sq();
        if (static_cast<torch::optim::AdamWOptions&>(options).weight_decay() != 0.0) p.mul_(decay);
      } else {
        auto* s = static_cast<torch::optim::AdamParamState*>(g.states[i]);
        exp_avg = s->exp_avg();
        exp_avg_sq = s->exp_avg_sq();
        const double wd = static_cast<torch::optim::AdamOptions&>(options).weight_decay();
        if (wd != 0.0) d_p = grad.add(p, wd);
      }
      exp_avg.mul_(beta1).add_(d_p, 1.0 - beta1);
      exp_avg_sq.mul_(beta2).addcmul_(d_p, d_p, 1.0 - beta2);
      const at::Tensor denom = (exp_avg_sq.sqrt() / second).add_(eps);
      p.add_(exp_avg * first / denom);  // p - lr / bias1 * exp_avg / denom
    }
  }
}

}  // namespace baton
