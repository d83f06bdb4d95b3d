// Algorithms that act on weights and gradients: layer freezing, EMA, SWA, gradient clipping, SAM,
// selective backprop.
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/algorithms/weights.h"
#include "baton/core/grad_scaler.h"
#include "baton/core/logger.h"
#include "common.h"

namespace baton {

namespace {

// The model's parameters and buffers by name.
std::vector<std::pair<std::string, at::Tensor>> named_tensors(torch::nn::Module& model) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : model.named_parameters()) out.emplace_back(p.key(), p.value());
  for (const auto& b : model.named_buffers()) out.emplace_back(b.key(), b.value());
  return out;
}

bool is_update_event(Event event, const Time& interval) {
  return interval.unit() == TimeUnit::kEpoch ? event == Event::kEpochEnd : event == Event::kBatchEnd;
}

// Whether `interval` has passed at this event: every n epochs at epoch_end, every n batches (or
// the batch that crosses a multiple of n samples) at batch_end.
bool interval_due(const State& state, const Time& interval) {
  const Timestamp& ts = state.timestamp;
  const int64_t n = std::max<int64_t>(1, interval.count());
  switch (interval.unit()) {
    case TimeUnit::kEpoch: return ts.epoch() % n == 0;
    case TimeUnit::kBatch: return ts.batch() % n == 0;
    case TimeUnit::kSample: {
      const int64_t batch = state.batch_samples > 0 ? state.batch_samples : state.batch.size();
      return ts.sample() / n > (ts.sample() - batch) / n;
    }
    default: return true;
  }
}

double batches_of(const State& state, const Time& t) { return detail::clock_of(state).to_batches(t); }

}  // namespace

// ---- LayerFreezing --------------------------------------------------------------------------

struct LayerFreezing::Impl {
  LayerFreezingOptions options_;
  int64_t frozen_ = 0;
  int64_t pending_load_ = -1;
};

LayerFreezing::~LayerFreezing() = default;

int64_t LayerFreezing::frozen_layers() const { return impl_->frozen_; }

LayerFreezing::LayerFreezing(LayerFreezingOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  if (!(impl_->options_.freeze_start() >= 0.0 && impl_->options_.freeze_start() < 1.0))
    throw std::invalid_argument("freeze_start must be in [0, 1)");
  if (!(impl_->options_.freeze_level() >= 0.0 && impl_->options_.freeze_level() <= 1.0))
    throw std::invalid_argument("freeze_level must be in [0, 1]");
  const TimeUnit u = impl_->options_.freeze_interval().unit();
  if ((u != TimeUnit::kBatch && u != TimeUnit::kEpoch && u != TimeUnit::kSample) ||
      impl_->options_.freeze_interval().count() < 1) {
    throw std::invalid_argument("freeze_interval must be a positive number of ep, ba or sp");
  }
}

bool LayerFreezing::match(Event event, const State& state) {
  if (event == Event::kFitStart) return impl_->pending_load_ >= 0;
  return is_update_event(event, impl_->options_.freeze_interval()) &&
         interval_due(state, impl_->options_.freeze_interval());
}

void LayerFreezing::freeze(State& state, int64_t count) {
  // Layers: modules with parameters of their own, in definition order.
  std::vector<std::shared_ptr<torch::nn::Module>> layers;
  for (const auto& m : state.model->modules(/*include_self=*/true)) {
    if (!m->named_parameters(/*recurse=*/false).is_empty()) layers.push_back(m);
  }
  count = std::min<int64_t>(count, static_cast<int64_t>(layers.size()));
  for (int64_t i = 0; i < count; ++i) {
    for (auto& p : layers[static_cast<std::size_t>(i)]->parameters(/*recurse=*/false)) {
      p.set_requires_grad(false);
      p.mutable_grad() = at::Tensor();  // no gradient, so the optimizer skips it (weight decay too)
    }
  }
  impl_->frozen_ = std::max(impl_->frozen_, count);
}

std::optional<int> LayerFreezing::apply(Event event, State& state, Logger& logger) {
  if (event == Event::kFitStart) {
    freeze(state, impl_->pending_load_);
    impl_->pending_load_ = -1;
    return std::nullopt;
  }
  const double t = detail::elapsed(state);
  if (t < impl_->options_.freeze_start()) return std::nullopt;
  int64_t layers = 0;
  for (const auto& m : state.model->modules(true)) layers += m->named_parameters(false).is_empty() ? 0 : 1;
  const double fraction =
      impl_->options_.freeze_level() * (t - impl_->options_.freeze_start()) / (1.0 - impl_->options_.freeze_start());
  const auto count = static_cast<int64_t>(std::floor(std::min(1.0, fraction) * static_cast<double>(layers)));
  if (count > impl_->frozen_) {
    freeze(state, count);
    logger.log_metrics({{"layer_freezing/frozen_layers", static_cast<double>(impl_->frozen_)}});
  }
  return std::nullopt;
}

StateDict LayerFreezing::state_dict() const {
  StateDict sd;
  sd.values["frozen_layers"] = impl_->frozen_;
  return sd;
}

void LayerFreezing::load_state_dict(const StateDict& state) {
  impl_->pending_load_ = state.values.value("frozen_layers", int64_t{0});  // frozen again when fit starts
  impl_->frozen_ = 0;
}

// ---- EMA ------------------------------------------------------------------------------------

struct Ema::Impl {
  EmaOptions options_;
  std::map<std::string, at::Tensor> ema_;
  bool swapped_ = false;
  bool swapped_for_eval_ = false;
};

Ema::~Ema() = default;

const std::map<std::string, at::Tensor>& Ema::ema_weights() const { return impl_->ema_; }
bool Ema::swapped_in() const { return impl_->swapped_; }

Ema::Ema(EmaOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  if (impl_->options_.smoothing() && !(*impl_->options_.smoothing() >= 0.0 && *impl_->options_.smoothing() < 1.0)) {
    throw std::invalid_argument("smoothing must be in [0, 1)");
  }
  if (!impl_->options_.smoothing() && impl_->options_.half_life().value() <= 0.0)
    throw std::invalid_argument("half_life must be positive");
  const TimeUnit u = impl_->options_.update_interval().unit();
  if (u != TimeUnit::kBatch && u != TimeUnit::kEpoch && u != TimeUnit::kSample) {
    throw std::invalid_argument("update_interval must be in ba, ep or sp");
  }
}

bool Ema::match(Event event, const State& /*state*/) {
  switch (event) {
    case Event::kFitStart:
    case Event::kBatchStart:
    case Event::kBatchEnd:
    case Event::kEpochEnd:
    case Event::kBatchCheckpoint:
    case Event::kEpochCheckpoint:
    case Event::kEvalStart:
    case Event::kEvalEnd:
    case Event::kFitEnd: return true;
    default: return false;
  }
}

bool Ema::started(const State& state) const {
  if (impl_->options_.ema_start().value() <= 0.0) return true;
  return static_cast<double>(state.timestamp.batch()) >= batches_of(state, impl_->options_.ema_start());
}

// Exchanges the model's tensors with the averaged ones without copying: each parameter keeps its
// identity (optimizers hold it) and takes the other storage.
void Ema::swap(State& state) {
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : named_tensors(*state.model)) {
    auto it = impl_->ema_.find(name);
    if (it == impl_->ema_.end()) continue;
    at::Tensor live = tensor.detach();  // shares the current storage
    tensor.set_data(it->second);
    it->second = live;
  }
  impl_->swapped_ = !impl_->swapped_;
}

std::optional<int> Ema::apply(Event event, State& state, Logger& /*logger*/) {
  switch (event) {
    case Event::kFitStart:
    case Event::kBatchStart:
      if (impl_->swapped_) swap(state);
      break;
    case Event::kBatchEnd:
    case Event::kEpochEnd: {
      if (!is_update_event(event, impl_->options_.update_interval()) ||
          !interval_due(state, impl_->options_.update_interval()) || !started(state)) {
        break;
      }
      // At an epoch's end the average may still be in place from the last batch's checkpoint.
      if (impl_->swapped_) swap(state);
      torch::NoGradGuard no_grad;
      if (impl_->ema_.empty()) {
        for (auto& [name, tensor] : named_tensors(*state.model)) impl_->ema_[name] = tensor.detach().clone();
        break;
      }
      double s = 0.0;
      if (impl_->options_.smoothing()) {
        s = *impl_->options_.smoothing();
      } else {
        const double interval = batches_of(state, impl_->options_.update_interval());
        s = std::pow(0.5, interval / batches_of(state, impl_->options_.half_life()));
      }
      for (const auto& p : state.model->named_parameters()) {
        at::Tensor& e = impl_->ema_.at(p.key());
        if (at::isFloatingType(e.scalar_type())) e.mul_(s).add_(p.value().detach(), 1.0 - s);
      }
      for (const auto& b : state.model->named_buffers()) impl_->ema_.at(b.key()).copy_(b.value());
      break;
    }
    case Event::kEvalStart:
      if (!impl_->swapped_ && !impl_->ema_.empty()) {
        swap(state);
        impl_->swapped_for_eval_ = true;
      }
      break;
    case Event::kEvalEnd:
      if (impl_->swapped_for_eval_ && impl_->swapped_) swap(state);
      impl_->swapped_for_eval_ = false;
      break;
    case Event::kBatchCheckpoint:
    case Event::kEpochCheckpoint:
    case Event::kFitEnd:
      if (!impl_->swapped_ && !impl_->ema_.empty()) swap(state);
      break;
    default: break;
  }
  return std::nullopt;
}

StateDict Ema::state_dict() const {
  StateDict sd;
  sd.values["swapped_in"] = impl_->swapped_;
  for (const auto& [name, tensor] : impl_->ema_) sd.tensors[name] = tensor;
  return sd;
}

void Ema::load_state_dict(const StateDict& state) {
  impl_->ema_.clear();
  for (const auto& [name, tensor] : state.tensors) impl_->ema_[name] = tensor.clone();
  impl_->swapped_ = state.values.value("swapped_in", false);
  impl_->swapped_for_eval_ = false;
}

// ---- SWA ------------------------------------------------------------------------------------

struct Swa::Impl {
  SwaOptions options_;
  std::map<std::string, at::Tensor> average_;
  int64_t count_ = 0;
  bool done_ = false;
  int64_t start_batch_ = -1;
  std::vector<double> base_lrs_;
};

Swa::~Swa() = default;

int64_t Swa::num_averaged() const { return impl_->count_; }
bool Swa::done() const { return impl_->done_; }

Swa::Swa(SwaOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  if (impl_->options_.anneal_steps() < 1) throw std::invalid_argument("anneal_steps must be at least 1");
  const TimeUnit u = impl_->options_.update_interval().unit();
  if (u != TimeUnit::kBatch && u != TimeUnit::kEpoch)
    throw std::invalid_argument("update_interval must be in ba or ep");
}

bool Swa::match(Event event, const State& /*state*/) {
  if (impl_->done_) return false;
  return event == Event::kBatchEnd || event == Event::kEpochEnd ||
         (impl_->options_.schedule_swa_lr() && event == Event::kBeforeTrainBatch);
}

namespace {

// The learning rates from each group's own (taken at the first batch past swa_start) towards
// swa_lr, over anneal_steps batches, cosine or linear.
void anneal_lrs(State& state, const SwaOptions& options, int64_t start_batch, const std::vector<double>& base_lrs) {
  const double done = static_cast<double>(state.timestamp.batch() - start_batch);
  const double t = std::min(1.0, done / static_cast<double>(options.anneal_steps()));
  const double f = options.anneal_strategy() == AnnealStrategy::kCos ? (1.0 - std::cos(M_PI * t)) / 2.0 : t;
  std::size_t i = 0;
  for (const auto& o : state.optimizers) {
    for (auto& g : o->param_groups()) {
      const double base = base_lrs.at(i++);
      const double target = options.swa_lr() > 0.0 ? options.swa_lr() : base;
      g.options().set_lr(base * (1.0 - f) + target * f);
    }
  }
}

}  // namespace

void recompute_batch_norm_statistics(State& state, int64_t max_batches) {
  std::vector<std::shared_ptr<torch::nn::BatchNorm2dImpl>> norms;
  for (const auto& m : state.model->modules()) {
    if (auto bn = std::dynamic_pointer_cast<torch::nn::BatchNorm2dImpl>(m)) norms.push_back(bn);
  }
  if (norms.empty() || !state.dataloader) return;
  std::vector<c10::optional<double>> momenta;
  for (auto& bn : norms) {
    momenta.push_back(bn->options.momentum());
    bn->reset_running_stats();
    bn->options.momentum(c10::nullopt);
  }
  const auto pass = state.dataloader->in_order(state.device);
  pass->start_epoch(0);
  Model& model = detail::model_of(state, "BatchNorm statistics");
  const bool was_training = model.is_training();
  model.train();
  torch::NoGradGuard no_grad;
  for (int64_t i = 0; max_batches < 0 || i < max_batches; ++i) {
    auto b = pass->next();
    if (!b) break;
    model.forward(*b);
  }
  model.train(was_training);
  for (std::size_t i = 0; i < norms.size(); ++i) norms[i]->options.momentum(momenta[i]);
}

std::optional<int> Swa::apply(Event event, State& state, Logger& logger) {
  const double batch = static_cast<double>(state.timestamp.batch());
  if (batch < batches_of(state, impl_->options_.swa_start())) return std::nullopt;
  if (event == Event::kBeforeTrainBatch) {
    if (impl_->start_batch_ < 0) {
      impl_->start_batch_ = state.timestamp.batch();
      impl_->base_lrs_.clear();
      for (const auto& o : state.optimizers) {
        for (auto& g : o->param_groups()) impl_->base_lrs_.push_back(g.options().get_lr());
      }
    }
    anneal_lrs(state, impl_->options_, impl_->start_batch_, impl_->base_lrs_);
    return std::nullopt;
  }
  torch::NoGradGuard no_grad;
  if (batch >= batches_of(state, impl_->options_.swa_end())) {  // the end: the model takes the average
    if (impl_->count_ == 0) return std::nullopt;
    for (auto& [name, tensor] : named_tensors(*state.model)) {
      auto it = impl_->average_.find(name);
      if (it != impl_->average_.end() && at::isFloatingType(tensor.scalar_type())) tensor.copy_(it->second);
    }
    recompute_batch_norm_statistics(state);
    impl_->done_ = true;
    logger.log_metrics({{"swa/num_averaged", static_cast<double>(impl_->count_)}});
    return std::nullopt;
  }
  if (!is_update_event(event, impl_->options_.update_interval()) ||
      !interval_due(state, impl_->options_.update_interval())) {
    return std::nullopt;
  }
  ++impl_->count_;
  for (auto& [name, tensor] : named_tensors(*state.model)) {
    if (!at::isFloatingType(tensor.scalar_type())) continue;
    auto it = impl_->average_.find(name);
    if (it == impl_->average_.end()) {
      impl_->average_[name] = tensor.detach().clone();
    } else {
      it->second.add_(tensor.detach() - it->second, 1.0 / static_cast<double>(impl_->count_));
    }
  }
  return std::nullopt;
}

StateDict Swa::state_dict() const {
  StateDict sd;
  sd.values = {{"count", impl_->count_},
               {"done", impl_->done_},
               {"start_batch", impl_->start_batch_},
               {"base_lrs", impl_->base_lrs_}};
  for (const auto& [name, tensor] : impl_->average_) sd.tensors[name] = tensor;
  return sd;
}

void Swa::load_state_dict(const StateDict& state) {
  impl_->count_ = state.values.value("count", int64_t{0});
  impl_->done_ = state.values.value("done", false);
  impl_->start_batch_ = state.values.value("start_batch", int64_t{-1});
  impl_->base_lrs_ = state.values.value("base_lrs", std::vector<double>{});
  impl_->average_.clear();
  for (const auto& [name, tensor] : state.tensors) impl_->average_[name] = tensor.clone();
}

// ---- GradientClipping -----------------------------------------------------------------------

GradientClipping::GradientClipping(GradientClippingOptions options) : options_(options) {
  if (!(options_.clipping_threshold() > 0.0)) throw std::invalid_argument("clipping_threshold must be positive");
}

bool GradientClipping::match(Event event, const State& /*state*/) { return event == Event::kAfterTrainBatch; }

std::string GradientClipping::sharding_blocker(Sharding sharding) const {
  const bool sharded_gradients = sharding == Sharding::kGradients || sharding == Sharding::kFull;
  return sharded_gradients && options_.clipping_type() == ClippingType::kAdaptive
             ? "needs whole gradients (clipping_type adaptive clips each output unit's row; norm and value work)"
             : "";
}

std::optional<int> GradientClipping::apply(Event /*event*/, State& state, Logger& /*logger*/) {
  torch::NoGradGuard no_grad;
  // The gradients this rank holds: its parameters', or under sharded gradients its shards.
  std::vector<at::Tensor> grads;
  std::vector<at::Tensor> params;
  if (state.gradient_shards) {
    grads = state.gradient_shards();
  } else {
    for (const auto& p : state.model->parameters()) {
      if (p.grad().defined()) params.push_back(p), grads.push_back(p.grad());
    }
  }
  const double threshold = options_.clipping_threshold();
  if (options_.clipping_type() == ClippingType::kNorm) {
    // LibTorch's clip_grad_norm_ reads the norm on the host; this keeps it on the device.
    std::vector<at::Tensor> norms;
    norms.reserve(grads.size());
    for (const auto& g : grads) norms.push_back(g.detach().norm(2).to(torch::kFloat));
    if (norms.empty() && !state.gradient_shards) return std::nullopt;
    at::Tensor total =
        norms.empty() ? torch::zeros({}, torch::TensorOptions().device(state.device)) : torch::stack(norms).norm(2);
    if (state.gradient_shards) total = state.sum_over_ranks(total.pow(2)).sqrt();  // every rank's shards
    const at::Tensor factor = (threshold / (total + 1e-6)).clamp_max(1.0);
    for (auto& g : grads) g.mul_(factor.to(g.scalar_type()));
  } else if (options_.clipping_type() == ClippingType::kValue) {
    for (auto& g : grads) g.clamp_(-threshold, threshold);
  } else {
    // Unit-wise: rows of a weight (output units), the whole tensor for vectors.
    for (auto& p : params) {
      const at::Tensor w = p.detach();
      at::Tensor g = p.mutable_grad();
      auto unit_norm = [](const at::Tensor& t) {
        return t.dim() <= 1 ? t.norm().view({1}) : t.flatten(1).norm(2, {1}, /*keepdim=*/true);
      };
      const at::Tensor max_norm = unit_norm(w).clamp_min(1e-3) * threshold;
      const at::Tensor g_norm = unit_norm(g).clamp_min(1e-6);
      const at::Tensor factor = (max_norm / g_norm).clamp_max(1.0);
      std::vector<int64_t> shape(static_cast<std::size_t>(g.dim()), 1);
      if (g.dim() > 1) shape[0] = g.size(0);
      g.mul_(g.dim() <= 1 ? factor : factor.view(shape));
    }
  }
  return std::nullopt;
}

// ---- SAM ------------------------------------------------------------------------------------

Sam::Sam(SamOptions options) : options_(options) {
  if (!(options_.rho() > 0.0)) throw std::invalid_argument("rho must be positive");
  if (options_.interval() < 1) throw std::invalid_argument("interval must be at least 1");
}

bool Sam::match(Event event, const State& state) {
  return event == Event::kAfterTrainBatch && state.timestamp.batch() % options_.interval() == 0;
}

std::optional<int> Sam::apply(Event /*event*/, State& state, Logger& /*logger*/) {
  Model& model = detail::model_of(state, name());
  std::vector<at::Tensor> params;
  for (const auto& p : model.parameters()) {
    if (p.grad().defined()) params.push_back(p);
  }
  if (params.empty()) return std::nullopt;
  std::vector<at::Tensor> steps;
  {
    torch::NoGradGuard no_grad;
    // The step's size stays on the device: no wait for it. A gradient that overflowed (amp_fp16's
    // first pass: an inf norm) gives no perturbation at all, never inf * 0 = NaN in the weights;
    // the second pass then overflows too and the scaler skips the step.
    at::Tensor norm = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(state.device));
    for (const auto& p : params) norm += p.grad().to(torch::kDouble).pow(2).sum();
    const at::Tensor scale =
        torch::where(norm.isfinite(), options_.rho() / (norm.sqrt() + options_.epsilon()), torch::zeros_like(norm))
            .to(torch::kFloat);
    for (auto& p : params) {
      steps.push_back(p.grad().nan_to_num(0.0, 0.0, 0.0) * scale.to(p.grad().scalar_type()));
      p.add_(steps.back());
      p.mutable_grad().zero_();
    }
  }
  // The gradient at the perturbed weights, for the whole batch, microbatch by microbatch.
  const int64_t n = state.batch.size();
  const int64_t mb = state.microbatch_size > 0 ? std::min(n, state.microbatch_size) : n;
  const auto inputs = state.batch.input.split(mb);
  const auto targets = state.batch.target.split(mb);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Batch part{inputs[i], targets[i]};
    at::Tensor loss;
    {
      AutocastGuard autocast(state.precision, state.device.type());
      loss = model.loss(model.forward(part), part);
    }
    loss = loss * (static_cast<double>(inputs[i].size(0)) / static_cast<double>(n));
    if (state.grad_scaler) loss = state.grad_scaler->scale(loss);  // amp_fp16: as the trainer's backward
    loss.backward();
  }
  if (state.reduce_gradients) state.reduce_gradients();  // data parallelism: every rank's gradient
  if (state.grad_scaler) {  // the optimizer steps on these gradients: unscaled, inf/NaN noted
    for (const auto& o : state.optimizers) {
      state.grad_scaler->mark_scaled(*o);
      state.grad_scaler->unscale(*o);
    }
  }
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params.size(); ++i) params[i].sub_(steps[i]);
  return std::nullopt;
}

// ---- SelectiveBackprop ----------------------------------------------------------------------

SelectiveBackprop::SelectiveBackprop(SelectiveBackpropOptions options) : options_(options) {
  if (!(options_.start() >= 0.0 && options_.start() <= options_.end() && options_.end() <= 1.0)) {
    throw std::invalid_argument("start and end must satisfy 0 <= start <= end <= 1");
  }
  if (!(options_.keep() > 0.0 && options_.keep() <= 1.0)) throw std::invalid_argument("keep must be in (0, 1]");
  if (!(options_.scale_factor() > 0.0 && options_.scale_factor() <= 1.0))
    throw std::invalid_argument("scale_factor must be in (0, 1]");
  if (options_.interval() < 1) throw std::invalid_argument("interval must be at least 1");
}

bool SelectiveBackprop::match(Event event, const State& state) {
  if (event != Event::kAfterDataloader) return false;
  const double t = detail::elapsed(state);
  return t >= options_.start() && t < options_.end() && state.timestamp.batch() % options_.interval() == 0;
}

std::optional<int> SelectiveBackprop::apply(Event /*event*/, State& state, Logger& /*logger*/) {
  Model& model = detail::model_of(state, name());
  const int64_t n = state.batch.size();
  const auto kept = std::max<int64_t>(1, static_cast<int64_t>(std::round(options_.keep() * static_cast<double>(n))));
  if (kept >= n) return std::nullopt;
  at::Tensor losses;
  {
    torch::NoGradGuard no_grad;
    Batch probe = state.batch;
    if (options_.scale_factor() < 1.0 && probe.input.dim() == 4) {
      probe.input = torch::nn::functional::interpolate(
          probe.input, torch::nn::functional::InterpolateFuncOptions()
                           .scale_factor(std::vector<double>{options_.scale_factor(), options_.scale_factor()})
                           .mode(torch::kBilinear)
                           .align_corners(false)
                           .recompute_scale_factor(true));
    }
    AutocastGuard autocast(state.precision, state.device.type());
    losses = model.loss_per_example(model.forward(probe), probe).to(torch::kFloat);
  }
  at::Tensor chosen;
  if (options_.method() == SelectionMethod::kTopK) {
    chosen = std::get<1>(losses.topk(kept));
  } else {
    // Composer's: examples drawn without replacement, weighted by their loss rank's percentile^(1/keep - 1).
    const at::Tensor order = losses.argsort();
    const at::Tensor percentile = (torch::arange(n, torch::kDouble) + 0.5) / static_cast<double>(n);
    const at::Tensor weights = percentile.pow(1.0 / options_.keep() - 1.0);
    chosen =
        order.index_select(0, detail::on_device_of(order, torch::multinomial(weights, kept, /*replacement=*/false)));
  }
  chosen = std::get<0>(chosen.sort());
  state.batch.input = state.batch.input.index_select(0, chosen);
  state.batch.target = state.batch.target.index_select(0, chosen);
  return std::nullopt;
}

}  // namespace baton
