#include "baton/core/grad_scaler.h"

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace baton {

GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(options.init_scale()) {
  if (!(options_.init_scale() > 0.0 && std::isfinite(options_.init_scale())))
    throw std::invalid_argument("init_scale must be a positive number, got " + std::to_string(options_.init_scale()));
  if (!(options_.growth_factor() > 1.0)) throw std::invalid_argument("growth_factor must be above 1");
  if (!(options_.backoff_factor() > 0.0 && options_.backoff_factor() < 1.0))
    throw std::invalid_argument("backoff_factor must be in (0, 1)");
  if (options_.growth_interval() < 1) throw std::invalid_argument("growth_interval must be at least 1");
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const { return loss * scale_; }

// On a GPU the gradients of one device and type are unscaled and checked by LibTorch's fused kernel
// (a launch or two for all of them, as PyTorch's GradScaler does), elsewhere one by one (LibTorch
// 1.13 has that kernel for CUDA only).
void GradScaler::unscale(torch::optim::Optimizer& optimizer) {
  Pending& p = pending_[&optimizer];
  if (p.unscaled) return;
  torch::NoGradGuard no_grad;
  const double inverse = 1.0 / scale_;
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
  Pending& p = pending_[&optimizer];
  p.overflow = p.found_inf.defined() && p.found_inf.item<bool>();
  if (!p.overflow) optimizer.step();
  return !p.overflow;
}

void GradScaler::update() {
  bool overflow = false;
  for (const auto& [optimizer, p] : pending_) overflow = overflow || p.overflow;
  pending_.clear();
  if (overflow) {
    scale_ *= options_.backoff_factor();
    growth_tracker_ = 0;
    ++skipped_;
  } else if (++growth_tracker_ >= options_.growth_interval()) {
    scale_ *= options_.growth_factor();
    growth_tracker_ = 0;
  }
}

nlohmann::json GradScaler::state_dict() const {
  return {{"scale", scale_}, {"growth_tracker", growth_tracker_}, {"skipped", skipped_}};
}

void GradScaler::load_state_dict(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("scale") || !state["scale"].is_number() ||
      !(state["scale"].get<double>() > 0.0)) {
    throw std::invalid_argument("grad scaler state: 'scale' is missing or not a positive number");
  }
  scale_ = state["scale"].get<double>();
  growth_tracker_ = state.value("growth_tracker", int64_t{0});
  skipped_ = state.value("skipped", int64_t{0});
  pending_.clear();
}

}  // namespace baton
