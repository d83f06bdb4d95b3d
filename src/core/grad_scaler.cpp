#include "baton/core/grad_scaler.h"

#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace baton {

struct GradScaler::Impl {
  GradScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;
  int64_t skipped_ = 0;
  std::map<const torch::optim::Optimizer*, Pending> pending_;  // this step's, per optimizer
};

GradScaler::~GradScaler() = default;

void GradScaler::mark_scaled(torch::optim::Optimizer& optimizer) { impl_->pending_[&optimizer].unscaled = false; }
double GradScaler::get_scale() const { return impl_->scale_; }
int64_t GradScaler::skipped_steps() const { return impl_->skipped_; }

GradScaler::GradScaler(GradScalerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  impl_->scale_ = options.init_scale();
  if (!(impl_->options_.init_scale() > 0.0 && std::isfinite(impl_->options_.init_scale())))
    throw std::invalid_argument("init_scale must be a positive number, got " +
                                std::to_string(impl_->options_.init_scale()));
  if (!(impl_->options_.growth_factor() > 1.0)) throw std::invalid_argument("growth_factor must be above 1");
  if (!(impl_->options_.backoff_factor() > 0.0 && impl_->options_.backoff_factor() < 1.0))
    throw std::invalid_argument("backoff_factor must be in (0, 1)");
  if (impl_->options_.growth_interval() < 1) throw std::invalid_argument("growth_interval must be at least 1");
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const { return loss * impl_->scale_; }

// On a GPU the gradients of one device and type are unscaled and checked by LibTorch's fused kernel
// (a launch or two for all of them, as PyTorch's GradScaler does), elsewhere one by one (LibTorch
// 1.13 has that kernel for CUDA only).
void GradScaler::unscale(torch::optim::Optimizer& optimizer) {
  Pending& p = impl_->pending_[&optimizer];
  if (p.unscaled) return;
  torch::NoGradGuard no_grad;
  const double inverse = 1.0 / impl_->scale_;
  auto note = [&](const at::Tensor& bad) { p.found_inf = p.found_inf.defined() ? p.found_inf.logical_or(bad) : bad; };
  std::map<std::pair<int, int>, std::vector<at::Tensor>> fused;  // (device index, type) -> gradients
  for (auto& group : optimizer.param_groups()) {
    for (auto& param : group.params()) {
      if (!param.grad().defined()) continue;
      at::Tensor& grad = param.mutable_grad();
      if (grad.is_cuda() && !grad.is_sparse()) {
        fused[{grad.device().index(), static_cast<int>(grad.scalar_type())}].push_back(grad);
        continue;
      }
      grad.mul_(inverse);
      note(grad.isfinite().logical_not().any());
    }
  }
  for (auto& [_, grads] : fused) {
    const auto options = torch::TensorOptions().dtype(torch::kFloat).device(grads.front().device());
    at::Tensor found_inf = torch::zeros({1}, options);
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, torch::full({1}, inverse, options));
    note(found_inf.squeeze(0) > 0);  // not view({}): LibTorch 2.x reads {} as a dtype (bytes)
  }
  p.unscaled = true;
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  unscale(optimizer);
  Pending& p = impl_->pending_[&optimizer];
  p.overflow = p.found_inf.defined() && p.found_inf.item<bool>();
  if (!p.overflow) optimizer.step();
  return !p.overflow;
}

void GradScaler::update() {
  bool overflow = false;
  for (const auto& [optimizer, p] : impl_->pending_) overflow = overflow || p.overflow;
  impl_->pending_.clear();
  if (overflow) {
    impl_->scale_ *= impl_->options_.backoff_factor();
    impl_->growth_tracker_ = 0;
    ++impl_->skipped_;
  } else if (++impl_->growth_tracker_ >= impl_->options_.growth_interval()) {
    impl_->scale_ *= impl_->options_.growth_factor();
    impl_->growth_tracker_ = 0;
  }
}

nlohmann::json GradScaler::state_dict() const {
  return {{"scale", impl_->scale_}, {"growth_tracker", impl_->growth_tracker_}, {"skipped", impl_->skipped_}};
}

void GradScaler::load_state_dict(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("scale") || !state["scale"].is_number() ||
      !(state["scale"].get<double>() > 0.0)) {
    throw std::invalid_argument("grad scaler state: 'scale' is missing or not a positive number");
  }
  impl_->scale_ = state["scale"].get<double>();
  impl_->growth_tracker_ = state.value("growth_tracker", int64_t{0});
  impl_->skipped_ = state.value("skipped", int64_t{0});
  impl_->pending_.clear();
}

}  // namespace baton
