// Algorithms that change the weights and the gradients (src/algorithms/weights.cpp): layer freezing,
// EMA, SWA, gradient clipping, SAM, selective backprop. The library: algorithms.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "baton/core/algorithm.h"
#include "baton/core/options.h"
#include "baton/core/time.h"

namespace baton {

class LayerFreezingOptions {
  BATON_ARG(double, freeze_start) = 0.5;                   // fraction of the run after which layers start to freeze
  BATON_ARG(double, freeze_level) = 1.0;                   // fraction of the layers frozen by the end
  BATON_ARG(Time, freeze_interval) = Time::from_epoch(1);  // how often the schedule is checked (ep, ba or sp)
};
// Layer freezing (Composer). epoch_end (or batch_end, every freeze_interval): the first layers
// (modules with parameters, in definition order) stop training: after freeze_start,
// freeze_level * (t - freeze_start) / (1 - freeze_start) of them. A frozen layer's parameters get no gradient and are
// not stepped. Logs layer_freezing/frozen_layers; the count is in checkpoints and re-applied on load.
class LayerFreezing : public Algorithm {
 public:
  ~LayerFreezing() override;
  explicit LayerFreezing(LayerFreezingOptions options = LayerFreezingOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;
  int64_t frozen_layers() const;
  std::string sharding_blocker(Sharding sharding) const override {
    return sharding == Sharding::kNone ? ""
                                       : "freezes layers mid-run, but a rank steps every element of its shard "
                                         "(frozen weights would move)";
  }

 private:
  void freeze(State& state, int64_t count);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class EmaOptions {
  BATON_ARG(Time, half_life) = Time::from_batch(1000);  // the age at which a step's weight halves
  BATON_ARG(std::optional<double>, smoothing);          // or the decay per update directly
  BATON_ARG(Time, update_interval) = Time::from_batch(1);
  BATON_ARG(Time, ema_start) = Time::from_duration(0.0);  // updates (and the swap) begin here
};
// Exponential moving average of the weights. batch_end/epoch_end (per update_interval):
// ema = s * ema + (1 - s) * weights, s = 0.5^(interval / half_life); buffers copied.
// eval_start: the averaged weights swapped in; eval_end: swapped back. *_checkpoint: swapped in so
// checkpoints hold them (with the live weights in this algorithm's state), back at batch_start.
// fit_end: swapped in, so the trained model is the average. Before ema_start nothing changes.
class Ema : public Algorithm {
 public:
  ~Ema() override;
  explicit Ema(EmaOptions options = EmaOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;
  // The averaged weights and buffers by name (empty before the first update).
  const std::map<std::string, at::Tensor>& ema_weights() const;
  std::string sharding_blocker(Sharding sharding) const override {
    return sharding == Sharding::kFull ? "needs whole parameters" : "";
  }
  bool swapped_in() const;

 private:
  void swap(State& state);
  bool started(const State& state) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// How SWA's learning rate goes to swa_lr: cos or linear.
enum class AnnealStrategy { kCos, kLinear };
BATON_ENUM_NAMES(AnnealStrategy, {AnnealStrategy::kCos, "cos"}, {AnnealStrategy::kLinear, "linear"})

// BatchNorm statistics (every BatchNorm2d's running mean and variance) computed anew as cumulative
// averages over the first `max_batches` batches of the training data in order (-1: all of them),
// in training mode without gradients: after SWA, or for an architecture of a one-shot supernet.
void recompute_batch_norm_statistics(State& state, int64_t max_batches = -1);

class SwaOptions {
  BATON_ARG(Time, swa_start) = Time::from_duration(0.7);
  BATON_ARG(Time, swa_end) = Time::from_duration(0.97);
  BATON_ARG(Time, update_interval) = Time::from_epoch(1);
  BATON_ARG(bool, schedule_swa_lr) = false;
  BATON_ARG(double, swa_lr) = -1.0;       // with schedule_swa_lr: the rate annealed to (default: the current one)
  BATON_ARG(int64_t, anneal_steps) = 10;  // batches of annealing
  BATON_ARG(AnnealStrategy, anneal_strategy) = AnnealStrategy::kCos;
};
// Stochastic Weight Averaging (Izmailov et al. 2018). Every update_interval between swa_start and
// swa_end the weights are added to a running average; at swa_end the model takes the average and
// BatchNorm statistics are recomputed with one pass over the training data. With schedule_swa_lr,
// the learning rate is annealed to swa_lr from swa_start (before_train_batch).
class Swa : public Algorithm {
 public:
  ~Swa() override;
  explicit Swa(SwaOptions options = SwaOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;
  int64_t num_averaged() const;
  std::string sharding_blocker(Sharding sharding) const override {
    return sharding == Sharding::kFull ? "needs whole parameters" : "";
  }
  bool done() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// norm: the global L2 norm; value: each element; adaptive: AGC.
enum class ClippingType { kNorm, kValue, kAdaptive };
BATON_ENUM_NAMES(ClippingType, {ClippingType::kNorm, "norm"}, {ClippingType::kValue, "value"},
                 {ClippingType::kAdaptive, "adaptive"})

class GradientClippingOptions {
  BATON_ARG(ClippingType, clipping_type) = ClippingType::kNorm;
  BATON_ARG(double, clipping_threshold) = 1.0;  // the norm, the value, or AGC's ratio of gradient to weight norm
};
// Gradient clipping. after_train_batch (after the last microbatch's backward, before the step).
// adaptive: Brock et al. 2021, unit-wise: a row's gradient norm is kept below
// threshold * max(row weight norm, 1e-3).
class GradientClipping : public Algorithm {
 public:
  explicit GradientClipping(GradientClippingOptions options = GradientClippingOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  // norm and value clip shards (the norm summed over the ranks); adaptive needs whole gradients.
  std::string sharding_blocker(Sharding sharding) const override;

 private:
  GradientClippingOptions options_;
};

class SamOptions {
  BATON_ARG(double, rho) = 0.05;       // the radius of the neighbourhood
  BATON_ARG(double, epsilon) = 1e-12;  // added to the gradient norm
  BATON_ARG(int64_t, interval) = 1;    // do SAM every this many steps (plain steps in between)
};
// Sharpness-Aware Minimization (Foret et al. 2021). after_train_batch: the weights move by
// rho * g / |g|, the batch's forward and backward run again there, and the weights move back,
// so the optimizer steps with the gradient of the perturbed point: two forward/backward passes
// per SAM step.
class Sam : public Algorithm {
 public:
  explicit Sam(SamOptions options = SamOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  // On every interval'th batch only: match() alone would miss it between those.
  std::string graph_blocker(const State& /*state*/) override {
    return "acts on after_train_batch (a second forward and backward), inside the train step";
  }
  std::string sharding_blocker(Sharding sharding) const override {
    return sharding == Sharding::kGradients || sharding == Sharding::kFull ? "needs whole gradients" : "";
  }

 private:
  SamOptions options_;
};

// top_k: the hardest examples; sample: drawn by loss rank (Composer's).
enum class SelectionMethod { kTopK, kSample };
BATON_ENUM_NAMES(SelectionMethod, {SelectionMethod::kTopK, "top_k"}, {SelectionMethod::kSample, "sample"})

class SelectiveBackpropOptions {
  BATON_ARG(double, start) = 0.5;         // fraction of the run where it begins
  BATON_ARG(double, end) = 0.9;           // ... and ends
  BATON_ARG(double, keep) = 0.5;          // fraction of each batch kept
  BATON_ARG(double, scale_factor) = 1.0;  // inputs scaled by this for the selection forward (cheaper)
  BATON_ARG(int64_t, interval) = 2;       // every this many batches
  BATON_ARG(SelectionMethod, method) = SelectionMethod::kTopK;
};
// Selective backprop (Jiang et al. 2019). after_dataloader: a forward without gradients ranks the
// batch's examples by loss and only the hardest `keep` fraction is trained on. The engine runs it
// before every other algorithm on each event.
class SelectiveBackprop : public Algorithm {
 public:
  explicit SelectiveBackprop(SelectiveBackpropOptions options = SelectiveBackpropOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;

 private:
  SelectiveBackpropOptions options_;
};

}  // namespace baton
