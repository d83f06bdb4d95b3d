#include "baton/optim/grad_scaler.h"

#include <cmath>
#include <stdexcept>
#include <string>

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

void GradScaler::unscale(torch::optim::Optimizer& optimizer) {
  Pending& p = pending_[&optimizer];
  if (p.unscaled) return;
  torch::NoGradGuard no_grad;
  const double inverse = 1.0 / scale_;
  for (auto& group : optimizer.param_groups()) {
    for (auto& param : group.params()) {
      if (!param.grad().defined()) continue;
      at::Tensor& grad = param.mutable_grad();
      grad.mul_(inverse);
      const at::Tensor bad = grad.isfinite().logical_not().any();
      p.found_inf = p.found_inf.defined() ? p.found_inf.logical_or(bad) : bad;
    }
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
