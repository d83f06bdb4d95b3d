#include "baton/callbacks/monitors.h"

#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "baton/core/logger.h"
#include "baton/core/state.h"
#include "baton/models/export.h"
#include "baton/models/model.h"

namespace baton {
namespace {

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A field of /proc/self/status in MB ("VmRSS:   123456 kB").
double status_mb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::istringstream fields(line.substr(field.size() + 1));
      double kb = 0;
      fields >> kb;
      return kb / 1024.0;
    }
  }
  return 0.0;
}

}  // namespace

// ---- SpeedMonitor ---------------------------------------------------------------------------

struct SpeedMonitor::Impl {
  int64_t window_size_;
  std::deque<std::pair<double, int64_t>> window_;  // (seconds, samples) per batch
  std::deque<InFlight> in_flight_;                 // batches the device may not have done yet
  Clock::time_point epoch_start_{};
  double macs_ = 0;
  int64_t tokens_per_sample_ = 0;  // windows of token indices ([N, T] integers): T
  bool counted_ = false;
};

SpeedMonitor::~SpeedMonitor() = default;

double SpeedMonitor::multiply_adds() const { return impl_->macs_; }

SpeedMonitor::SpeedMonitor(SpeedMonitorOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->window_size_ = options.window_size();
  if (impl_->window_size_ < 1) throw std::invalid_argument("window_size must be at least 1");
}

void SpeedMonitor::fit_start(State& /*state*/, Logger& /*logger*/) {
  impl_->window_.clear();
  impl_->in_flight_.clear();
}

void SpeedMonitor::epoch_start(State& /*state*/, Logger& /*logger*/) { impl_->epoch_start_ = Clock::now(); }

void SpeedMonitor::batch_start(State& state, Logger& /*logger*/) {
  impl_->in_flight_.push_back({DeviceMarker(state.device), std::nullopt, 0, 0});
  if (impl_->counted_) return;
  impl_->counted_ = true;
  auto* model = dynamic_cast<Model*>(state.model.get());
  if (model == nullptr || !state.batch.input.defined()) return;
  const at::Tensor& input = state.batch.input;
  if (input.dim() == 2 && !at::isFloatingType(input.scalar_type())) impl_->tokens_per_sample_ = input.size(1);
  try {
    impl_->macs_ =
        count_multiply_adds(*model, state.batch.input.narrow(0, 0, std::min<int64_t>(2, state.batch.size())));
  } catch (const std::exception& e) {
    spdlog::info("speed_monitor: no FLOP estimate ({})", e.what());
  }
}

void SpeedMonitor::batch_end(State& state, Logger& logger) {
  if (impl_->in_flight_.empty() || impl_->in_flight_.back().end) return;  // no batch_start seen for this batch
  InFlight& batch = impl_->in_flight_.back();
  batch.end.emplace(state.device);
  // Every data-parallel rank's samples: the job's throughput.
  batch.samples = state.batch_samples > 0 ? state.batch_samples : state.batch.size();
  batch.step = state.timestamp.batch();
  // What the device has finished, in order; a device far behind loses its oldest measurements.
  while (!impl_->in_flight_.empty() && impl_->in_flight_.front().end &&
         (impl_->in_flight_.front().end->done() ||
          static_cast<int64_t>(impl_->in_flight_.size()) > 4 * impl_->window_size_ + 64)) {
    if (impl_->in_flight_.front().end->done()) measure(impl_->in_flight_.front(), logger);
    impl_->in_flight_.pop_front();
  }
}

void SpeedMonitor::measure(const InFlight& batch, Logger& logger) {
  impl_->window_.emplace_back(batch.end->seconds_since(batch.start), batch.samples);
  while (static_cast<int64_t>(impl_->window_.size()) > impl_->window_size_) impl_->window_.pop_front();
  double s = 0;
  int64_t samples = 0;
  for (const auto& [sec, n] : impl_->window_) {
    s += sec;
    samples += n;
  }
  if (s <= 0) return;
  Metrics m = {{"throughput/samples_per_sec", static_cast<double>(samples) / s},
               {"throughput/batches_per_sec", static_cast<double>(impl_->window_.size()) / s}};
  if (impl_->macs_ > 0) m["throughput/flops_per_sec"] = 2.0 * 3.0 * impl_->macs_ * static_cast<double>(samples) / s;
  if (impl_->tokens_per_sample_ > 0) {
    m["throughput/tokens_per_sec"] = static_cast<double>(impl_->tokens_per_sample_ * samples) / s;
  }
  logger.log_metrics(m, batch.step);
}

void SpeedMonitor::epoch_end(State& /*state*/, Logger& logger) {
  if (impl_->epoch_start_ != Clock::time_point{})
    logger.log_metrics({{"wall_clock/epoch_s", seconds(Clock::now() - impl_->epoch_start_)}});
}

// ---- LrMonitor ------------------------------------------------------------------------------

void LrMonitor::before_train_batch(State& state, Logger& logger) {
  Metrics m;
  for (std::size_t o = 0; o < state.optimizers.size(); ++o) {
    auto& groups = state.optimizers[o]->param_groups();
    const std::string name = "lr-" + std::string(o == 0 ? "" : std::to_string(o) + "-") + "optimizer";
    for (std::size_t g = 0; g < groups.size(); ++g) {
      m[name + "/group" + std::to_string(g)] = groups[g].options().get_lr();
    }
  }
  if (!m.empty()) logger.log_metrics(m, state.timestamp.batch() + 1);  // the step of this batch's loss
}

// ---- OptimizerMonitor -----------------------------------------------------------------------

void OptimizerMonitor::after_train_batch(State& state, Logger& logger) {
  torch::NoGradGuard no_grad;
  double grad_sq = 0;
  double param_sq = 0;
  Metrics m;
  for (const auto& p : state.model->named_parameters()) {
    const double w = p.value().detach().to(torch::kDouble).pow(2).sum().item<double>();
    param_sq += w;
    if (!p.value().grad().defined()) continue;
    const double g = p.value().grad().to(torch::kDouble).pow(2).sum().item<double>();
    grad_sq += g;
    if (per_layer_) {
      m["optimizer/grad_l2_norm/" + p.key()] = std::sqrt(g);
      m["optimizer/param_l2_norm/" + p.key()] = std::sqrt(w);
    }
  }
  m["optimizer/grad_l2_norm"] = std::sqrt(grad_sq);
  m["optimizer/param_l2_norm"] = std::sqrt(param_sq);
  logger.log_metrics(m);
}

// ---- MemoryMonitor --------------------------------------------------------------------------

double MemoryMonitor::rss_mb() { return status_mb("VmRSS"); }
double MemoryMonitor::peak_rss_mb() { return status_mb("VmHWM"); }

void MemoryMonitor::epoch_start(State& state, Logger& /*logger*/) { reset_peak_memory(state.device); }

void MemoryMonitor::batch_end(State& state, Logger& logger) {
  if (interval_ > 0 && state.timestamp.batch() % interval_ != 0) return;
  logger.log_metrics({{"memory/rss_mb", rss_mb()}, {"memory/peak_rss_mb", peak_rss_mb()}});
}

void MemoryMonitor::epoch_end(State& state, Logger& logger) {
  const auto memory = device_memory(state.device);
  if (!memory) return;
  constexpr double kMb = 1024.0 * 1024.0;
  logger.log_metrics({{"memory/cuda_allocated_mb", static_cast<double>(memory->allocated) / kMb},
                      {"memory/cuda_reserved_mb", static_cast<double>(memory->reserved) / kMb},
                      {"memory/cuda_peak_mb", static_cast<double>(memory->peak) / kMb}});
}

// ---- NanMonitor -----------------------------------------------------------------------------

void NanMonitor::after_loss(State& state, Logger& /*logger*/) {
  if (!state.loss.defined()) return;
  const double loss = state.loss.detach().to(torch::kDouble).item<double>();
  if (std::isfinite(loss)) return;
  throw std::runtime_error(
      "nan_monitor: the loss is " + std::to_string(loss) + " at batch " + std::to_string(state.timestamp.batch() + 1) +
      " (epoch " + std::to_string(state.timestamp.epoch()) +
      "); training stopped, earlier checkpoints are kept. Lower the learning rate or check the data");
}

// ---- RuntimeEstimator -----------------------------------------------------------------------

struct RuntimeEstimator::Impl {
  std::chrono::steady_clock::time_point start_{};
  double done_at_start_ = 0;
  std::optional<double> remaining_;
};

RuntimeEstimator::RuntimeEstimator() : impl_(std::make_unique<Impl>()) {}
RuntimeEstimator::~RuntimeEstimator() = default;

std::optional<double> RuntimeEstimator::remaining_s() const { return impl_->remaining_; }

void RuntimeEstimator::fit_start(State& state, Logger& /*logger*/) {
  impl_->start_ = std::chrono::steady_clock::now();
  impl_->done_at_start_ = state.elapsed_duration().value_or(0.0);
}

void RuntimeEstimator::batch_end(State& state, Logger& logger) {
  const auto done = state.elapsed_duration();
  if (!done) return;
  const double elapsed = seconds(std::chrono::steady_clock::now() - impl_->start_);
  const double progress = *done - impl_->done_at_start_;
  if (progress <= 0) return;
  impl_->remaining_ = std::max(0.0, elapsed / progress * (1.0 - *done));
  logger.log_metrics({{"time/remaining_estimate_s", *impl_->remaining_}, {"time/elapsed_s", elapsed}});
}

// ---- FreeOutputs, LambdaCallback ------------------------------------------------------------

void FreeOutputs::after_loss(State& state, Logger& /*logger*/) { state.outputs = at::Tensor(); }

void LambdaCallback::run_event(Event event, State& state, Logger& logger) {
  const auto it = hooks_.find(event);
  if (it != hooks_.end()) it->second(state, logger);
}

}  // namespace baton
