// The algorithm library: training methods as Algorithms (Composer's, for CPU training of image
// classifiers). Each is constructible by name from a recipe (make_algorithm, registry.h) and
// documented in docs/algorithms.md (what it does, its events, its options and their defaults).
//
//   TrainerOptions().algorithms({std::make_shared<baton::LabelSmoothing>(LabelSmoothingOptions().smoothing(0.1)),
//                                std::make_shared<baton::Ema>(EmaOptions().half_life(Time::parse("50ba")))});
//
// Randomness comes from LibTorch's default generator (seeded by the recipe, saved in checkpoints),
// so a seeded run is reproducible and resumes exactly.
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

// ---- Targets and inputs ---------------------------------------------------------------------

class LabelSmoothingOptions {
  BATON_ARG(double, smoothing) = 0.1;  // weight moved from the true class to all classes uniformly, in [0, 1)
};
// before_loss: targets become (1 - s) * onehot + s / classes; after_loss: the original targets return.
class LabelSmoothing : public Algorithm {
 public:
  explicit LabelSmoothing(LabelSmoothingOptions options = LabelSmoothingOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;

 private:
  LabelSmoothingOptions options_;
  at::Tensor original_;
};

class MixOptions {
  BATON_ARG(double, alpha) = 0.2;             // the Beta(alpha, alpha) the mixing coefficient is drawn from
  BATON_ARG(bool, interpolate_loss) = false;  // mix the two losses instead of the targets
  BATON_ARG(bool, uniform_sampling) = false;  // CutMix: box centres uniform over the whole image (else inside it)
};

// MixUp (Zhang et al. 2018). before_forward: x = (1 - λ) x + λ x[perm], λ ≤ 0.5; then either
// before_loss/after_loss: targets mixed the same way (and restored), or with interpolate_loss,
// before_backward: loss = (1 - λ) loss(y) + λ loss(y[perm]).
class MixUp : public Algorithm {
 public:
  explicit MixUp(MixOptions options = MixOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool interpolate_loss() const override { return options_.interpolate_loss(); }
  // The coefficient of the last batch (for tests and logs).
  double mixing() const { return mixing_; }

 protected:
  virtual void mix_inputs(State& state);
  MixOptions options_;
  double mixing_ = 0.0;  // the weight of the permuted examples
  at::Tensor permutation_;
  at::Tensor original_;
};

// CutMix (Yun et al. 2019): a box of the permuted images pasted in; λ is the box's share of the
// area. Events and options as MixUp (alpha default 1.0).
class CutMix : public MixUp {
 public:
  explicit CutMix(MixOptions options = MixOptions().alpha(1.0));

 protected:
  void mix_inputs(State& state) override;
};

class CutOutOptions {
  BATON_ARG(int64_t, num_holes) = 1;
  BATON_ARG(double, length) = 0.5;  // a hole's side: a fraction of the image's shorter side (< 1) or pixels (>= 1)
  BATON_ARG(bool, uniform_sampling) = false;  // centres anywhere (holes may be cut by the border); else inside
};
// CutOut (DeVries & Taylor 2017). after_dataloader: squares of each image set to 0 (the mean of
// standardised data), independently per image.
class CutOut : public Algorithm {
 public:
  explicit CutOut(CutOutOptions options = CutOutOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;

 private:
  CutOutOptions options_;
};

class ColOutOptions {
  BATON_ARG(double, p_row) = 0.15;  // fraction of rows dropped
  BATON_ARG(double, p_col) = 0.15;  // fraction of columns dropped
};
// ColOut: after_dataloader, the same random rows and columns dropped from every image of the
// batch, so images get smaller (a model with global pooling takes them; fashion_cnn does not).
class ColOut : public Algorithm {
 public:
  explicit ColOut(ColOutOptions options = ColOutOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;

 private:
  ColOutOptions options_;
};

class RandAugmentOptions {
  BATON_ARG(int64_t, severity) = 9;  // 0..10: how strong each operation is
  BATON_ARG(int64_t, depth) = 2;     // operations per image
  // Operations to draw from: "all", "geometric" (rotate, shear, translate) or "intensity".
  BATON_ARG(std::string, augmentation_set) = "all";
};
// RandAugment (Cubuk et al. 2020) on tensors: after_dataloader, `depth` operations per image drawn
// uniformly from the set (identity, autocontrast, equalize-like contrast stretch, rotate, solarize,
// posterize, contrast, brightness, sharpness, shear x/y, translate x/y) at a random sign of the
// severity. Works on standardised inputs (each image mapped to [0, 1] and back).
class RandAugment : public Algorithm {
 public:
  explicit RandAugment(RandAugmentOptions options = RandAugmentOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;

 private:
  RandAugmentOptions options_;
  std::vector<int> ops_;
};

class ProgressiveResizingOptions {
  BATON_ARG(std::string, mode) = "resize";     // resize (bilinear) or crop (a random crop)
  BATON_ARG(double, initial_scale) = 0.5;      // the side's scale at the start
  BATON_ARG(double, finetune_fraction) = 0.2;  // the last part of training at full size
  BATON_ARG(double, delay_fraction) = 0.5;     // the first part of training at initial_scale
  BATON_ARG(int64_t, size_increment) = 4;      // sides are multiples of this
};
// Progressive resizing (Touvron et al.; Composer). after_dataloader: images shrunk to a side that
// grows linearly from initial_scale to 1 between delay_fraction and 1 - finetune_fraction of the
// run. Logs progressive_resizing/side.
class ProgressiveResizing : public Algorithm {
 public:
  explicit ProgressiveResizing(ProgressiveResizingOptions options = ProgressiveResizingOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  // The scale at a fraction of the run.
  double scale_at(double elapsed) const;

 private:
  ProgressiveResizingOptions options_;
  int64_t last_side_ = -1;
};

// ---- Weights and gradients ------------------------------------------------------------------

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
  explicit LayerFreezing(LayerFreezingOptions options = LayerFreezingOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;
  int64_t frozen_layers() const { return frozen_; }

 private:
  void freeze(State& state, int64_t count);
  LayerFreezingOptions options_;
  int64_t frozen_ = 0;
  int64_t pending_load_ = -1;
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
  explicit Ema(EmaOptions options = EmaOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;
  // The averaged weights and buffers by name (empty before the first update).
  const std::map<std::string, at::Tensor>& ema_weights() const { return ema_; }
  bool swapped_in() const { return swapped_; }

 private:
  void swap(State& state);
  bool started(const State& state) const;
  EmaOptions options_;
  std::map<std::string, at::Tensor> ema_;
  bool swapped_ = false;
  bool swapped_for_eval_ = false;
};

class SwaOptions {
  BATON_ARG(Time, swa_start) = Time::from_duration(0.7);
  BATON_ARG(Time, swa_end) = Time::from_duration(0.97);
  BATON_ARG(Time, update_interval) = Time::from_epoch(1);
  BATON_ARG(bool, schedule_swa_lr) = false;
  BATON_ARG(double, swa_lr) = -1.0;       // with schedule_swa_lr: the rate annealed to (default: the current one)
  BATON_ARG(int64_t, anneal_steps) = 10;  // batches of annealing
  BATON_ARG(std::string, anneal_strategy) = "cos";  // cos or linear
};
// Stochastic Weight Averaging (Izmailov et al. 2018). Every update_interval between swa_start and
// swa_end the weights are added to a running average; at swa_end the model takes the average and
// BatchNorm statistics are recomputed with one pass over the training data. With schedule_swa_lr,
// the learning rate is annealed to swa_lr from swa_start (before_train_batch).
class Swa : public Algorithm {
 public:
  explicit Swa(SwaOptions options = SwaOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;
  int64_t num_averaged() const { return count_; }
  bool done() const { return done_; }

 private:
  SwaOptions options_;
  std::map<std::string, at::Tensor> average_;
  int64_t count_ = 0;
  bool done_ = false;
  int64_t start_batch_ = -1;
  std::vector<double> base_lrs_;
};

class GradientClippingOptions {
  BATON_ARG(std::string, clipping_type) = "norm";  // norm (global L2 norm), value (each element), adaptive (AGC)
  BATON_ARG(double, clipping_threshold) = 1.0;     // the norm, the value, or AGC's ratio of gradient to weight norm
};
// Gradient clipping. after_train_batch (after the last microbatch's backward, before the step).
// adaptive: Brock et al. 2021, unit-wise: a row's gradient norm is kept below
// threshold * max(row weight norm, 1e-3).
class GradientClipping : public Algorithm {
 public:
  explicit GradientClipping(GradientClippingOptions options = GradientClippingOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;

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

 private:
  SamOptions options_;
};

class SelectiveBackpropOptions {
  BATON_ARG(double, start) = 0.5;            // fraction of the run where it begins
  BATON_ARG(double, end) = 0.9;              // ... and ends
  BATON_ARG(double, keep) = 0.5;             // fraction of each batch kept
  BATON_ARG(double, scale_factor) = 1.0;     // inputs scaled by this for the selection forward (cheaper)
  BATON_ARG(int64_t, interval) = 2;          // every this many batches
  BATON_ARG(std::string, method) = "top_k";  // top_k: the hardest examples; sample: drawn by loss rank (Composer)
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

// ---- Model surgery and layout ---------------------------------------------------------------

// Channels-last (NHWC) memory format. init: the model's 4-d weights; after_dataloader and
// eval_before_forward: the inputs. Faster convolutions with oneDNN on some CPUs.
class ChannelsLast : public Algorithm {
 public:
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
};

class BlurPoolOptions {
  BATON_ARG(bool, replace_convs) = true;     // strided Conv2d -> blur + conv
  BATON_ARG(bool, replace_maxpools) = true;  // MaxPool2d -> max (stride 1) + blur
  BATON_ARG(bool, blur_first) = true;        // blur before the conv (cheaper) or after it
  BATON_ARG(int64_t, min_channels) = 16;     // convs with fewer input channels are kept
};
// BlurPool (Zhang 2019): anti-aliased downsampling. init: surgery on the model's Replaceable
// modules; outputs keep their shapes. Required on load.
class BlurPool : public Algorithm {
 public:
  explicit BlurPool(BlurPoolOptions options = BlurPoolOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool required_on_load() const override { return true; }
  int replaced() const { return replaced_; }

 private:
  BlurPoolOptions options_;
  int replaced_ = 0;
};

class SqueezeExciteOptions {
  BATON_ARG(double, latent_channels) = 64;  // the bottleneck: channels (>= 1) or a fraction of them (< 1)
  BATON_ARG(int64_t, min_channels) = 128;   // convs with fewer output channels are kept
};
// Squeeze-and-Excitation (Hu et al. 2018). init: each Conv2d with at least min_channels outputs
// is followed by an SE block (global pool, linear, relu, linear, sigmoid, channel scale).
// Required on load.
class SqueezeExcite : public Algorithm {
 public:
  explicit SqueezeExcite(SqueezeExciteOptions options = SqueezeExciteOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool required_on_load() const override { return true; }
  int replaced() const { return replaced_; }

 private:
  SqueezeExciteOptions options_;
  int replaced_ = 0;
};

class StochasticDepthOptions {
  BATON_ARG(double, drop_rate) = 0.2;                    // the last block's drop probability
  BATON_ARG(std::string, drop_distribution) = "linear";  // linear: block l of L drops with drop_rate * l / L; uniform
};
// Stochastic depth (Huang et al. 2016) on ResNet basic blocks. init: each block is wrapped; in
// training its residual branch is skipped with its drop probability, at evaluation it is scaled by
// the keep probability. Required on load.
class StochasticDepth : public Algorithm {
 public:
  explicit StochasticDepth(StochasticDepthOptions options = StochasticDepthOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool required_on_load() const override { return true; }
  int replaced() const { return replaced_; }

 private:
  StochasticDepthOptions options_;
  int replaced_ = 0;
};

class GhostBatchNormOptions {
  BATON_ARG(int64_t, ghost_batch_size) = 32;  // examples per normalisation group
};
// Ghost BatchNorm (Hoffer et al. 2017). init: BatchNorm2d layers normalise each group of
// ghost_batch_size examples on its own during training (evaluation unchanged). Required on load.
class GhostBatchNorm : public Algorithm {
 public:
  explicit GhostBatchNorm(GhostBatchNormOptions options = GhostBatchNormOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool required_on_load() const override { return true; }
  int replaced() const { return replaced_; }

 private:
  GhostBatchNormOptions options_;
  int replaced_ = 0;
};

// Low-precision GroupNorm / LayerNorm. init: the norm layers compute in the autocast dtype
// (bf16) under mixed precision instead of being upcast to fp32; unchanged otherwise. The engine
// runs them after other algorithms. Required on load.
class LowPrecisionGroupNorm : public Algorithm {
 public:
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool required_on_load() const override { return true; }
  int replaced() const { return replaced_; }

 private:
  int replaced_ = 0;
};
class LowPrecisionLayerNorm : public Algorithm {
 public:
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool required_on_load() const override { return true; }
  int replaced() const { return replaced_; }

 private:
  int replaced_ = 0;
};

}  // namespace baton
