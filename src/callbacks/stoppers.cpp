#include "baton/callbacks/stoppers.h"

#include <cmath>
#include <memory>
#include <stdexcept>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "baton/core/logger.h"
#include "baton/core/state.h"

namespace baton {
namespace {

// "eval/accuracy" -> {"eval", "accuracy"}; "eval/val/f1" -> {"eval/val", "f1"} (an evaluation set's
// label is all before the last '/').
std::pair<std::string, std::string> split_monitor(const std::string& monitor) {
  const auto slash = monitor.rfind('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == monitor.size()) {
    throw std::invalid_argument("monitor must be '<evaluator>/<metric>' such as eval/accuracy, got '" + monitor + "'");
  }
  return {monitor.substr(0, slash), monitor.substr(slash + 1)};
}

bool greater_is_better(Comparison comparison, const std::string& metric) {
  if (comparison == Comparison::kGe) return true;
  if (comparison == Comparison::kLe) return false;
  return metric.find("loss") == std::string::npos && metric.find("error") == std::string::npos;
}

// The model's parameters and buffers, copied to host memory.
std::vector<at::Tensor> weights_of(const torch::nn::Module& model) {
  std::vector<at::Tensor> out;
  for (const auto& p : model.parameters()) out.push_back(p.detach().to(torch::kCPU, /*non_blocking=*/false, true));
  for (const auto& b : model.buffers()) out.push_back(b.detach().to(torch::kCPU, /*non_blocking=*/false, true));
  return out;
}

void restore_weights(torch::nn::Module& model, const std::vector<at::Tensor>& saved) {
  torch::NoGradGuard no_grad;
  std::size_t i = 0;
  for (auto& p : model.parameters()) p.copy_(saved.at(i++));
  for (auto& b : model.buffers()) b.copy_(saved.at(i++));
}

}  // namespace

struct ThresholdStopper::Impl {
  ThresholdStopperOptions options_;
  std::string label_;
  std::string metric_;
  bool greater_;
  std::optional<int64_t> stopped_at_;
};

ThresholdStopper::~ThresholdStopper() = default;

std::optional<int64_t> ThresholdStopper::stopped_at() const { return impl_->stopped_at_; }

ThresholdStopper::ThresholdStopper(ThresholdStopperOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = std::move(options);
  std::tie(impl_->label_, impl_->metric_) = split_monitor(impl_->options_.monitor());
  impl_->greater_ = greater_is_better(impl_->options_.comparison(), impl_->metric_);
}

void ThresholdStopper::check(State& state, double value) {
  if (impl_->stopped_at_ || !std::isfinite(value)) return;
  if (impl_->greater_ ? value >= impl_->options_.threshold() : value <= impl_->options_.threshold()) {
    impl_->stopped_at_ = state.timestamp.batch();
    spdlog::info("threshold_stopper: {} = {:.4f} reached {} at {}; stopping", impl_->options_.monitor(), value,
                 impl_->options_.threshold(), state.timestamp.to_string());
    state.stop_training();
  }
}

void ThresholdStopper::eval_end(State& state, Logger& /*logger*/) {
  if (state.dataloader_label != impl_->label_) return;
  if (auto v = state.eval_metric(impl_->options_.monitor())) check(state, *v);
}

void ThresholdStopper::batch_end(State& state, Logger& /*logger*/) {
  if (impl_->label_ == "train" && impl_->metric_ == "loss" && state.loss.defined())
    check(state, state.loss.item<double>());
}

struct EarlyStopper::Impl {
  EarlyStopperOptions options_;
  std::string label_;
  std::string metric_;
  bool greater_;
  std::optional<double> best_;
  int64_t best_at_ = 0;                   // in patience's unit
  std::vector<at::Tensor> best_weights_;  // the model's parameters and buffers then, on the CPU
};

EarlyStopper::~EarlyStopper() = default;

int64_t EarlyStopper::best_at() const { return impl_->best_at_; }

std::optional<double> EarlyStopper::best() const { return impl_->best_; }

EarlyStopper::EarlyStopper(EarlyStopperOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = std::move(options);
  std::tie(impl_->label_, impl_->metric_) = split_monitor(impl_->options_.monitor());
  impl_->greater_ = greater_is_better(impl_->options_.comparison(), impl_->metric_);
  const TimeUnit u = impl_->options_.patience().unit();
  if (u != TimeUnit::kEpoch && u != TimeUnit::kBatch) throw std::invalid_argument("patience must be in ep or ba");
  if (impl_->options_.min_delta() < 0.0) throw std::invalid_argument("min_delta must be at least 0");
}

void EarlyStopper::eval_end(State& state, Logger& /*logger*/) {
  if (state.dataloader_label != impl_->label_) return;
  const auto value = state.eval_metric(impl_->options_.monitor());
  if (!value) return;
  const int64_t now =
      impl_->options_.patience().unit() == TimeUnit::kEpoch ? state.timestamp.epoch() : state.timestamp.batch();
  const bool improved = !impl_->best_ || (impl_->greater_ ? *value > *impl_->best_ + impl_->options_.min_delta()
                                                          : *value < *impl_->best_ - impl_->options_.min_delta());
  if (improved) {
    impl_->best_ = *value;
    impl_->best_at_ = now;
    if (impl_->options_.restore_best() && state.model) impl_->best_weights_ = weights_of(*state.model);
    return;
  }
  if (now - impl_->best_at_ >= impl_->options_.patience().count()) {
    std::string restored;
    if (impl_->options_.restore_best() && state.model && !impl_->best_weights_.empty()) {
      restore_weights(*state.model, impl_->best_weights_);
      restored = "; the weights of the best evaluation restored";
    } else if (impl_->options_.restore_best()) {
      restored = "; the best evaluation was before the run resumed: its weights are not kept, the last stay";
    }
    spdlog::info("early_stopper: {} has not improved on {:.4f} for {}; stopping at {}{}", impl_->options_.monitor(),
                 *impl_->best_, impl_->options_.patience().to_string(), state.timestamp.to_string(), restored);
    state.stop_training();
  }
}

StateDict EarlyStopper::state_dict() const {
  StateDict sd;
  if (impl_->best_) sd.values["best"] = *impl_->best_;
  sd.values["best_at"] = impl_->best_at_;
  return sd;
}

void EarlyStopper::load_state_dict(const StateDict& state) {
  impl_->best_ =
      state.values.contains("best") ? std::optional<double>(state.values["best"].get<double>()) : std::nullopt;
  impl_->best_at_ = state.values.value("best_at", int64_t{0});
}

}  // namespace baton
