// Algorithms that change the targets and the inputs (src/algorithms/augment.cpp): label smoothing,
// MixUp, CutMix, CutOut, ColOut, RandAugment, progressive resizing. The library: algorithms.h.
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

namespace baton {

class LabelSmoothingOptions {
  BATON_ARG(double, smoothing) = 0.1;  // weight moved from the true class to all classes uniformly, in [0, 1)
};
// before_loss: targets become (1 - s) * onehot + s / classes; after_loss: the original targets return.
class LabelSmoothing : public Algorithm {
 public:
  ~LabelSmoothing() override;
  explicit LabelSmoothing(LabelSmoothingOptions options = LabelSmoothingOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
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
  ~MixUp() override;
  explicit MixUp(MixOptions options = MixOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool interpolate_loss() const override;
  // The coefficient of the last batch (for tests and logs).
  double mixing() const;

 protected:
  virtual void mix_inputs(State& state);
  struct Impl;
  std::unique_ptr<Impl> impl_;
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

// RandAugment's operations to draw from: all, geometric (rotate, shear, translate) or intensity.
enum class AugmentationSet { kAll, kGeometric, kIntensity };
BATON_ENUM_NAMES(AugmentationSet, {AugmentationSet::kAll, "all"}, {AugmentationSet::kGeometric, "geometric"},
                 {AugmentationSet::kIntensity, "intensity"})

class RandAugmentOptions {
  BATON_ARG(int64_t, severity) = 9;  // 0..10: how strong each operation is
  BATON_ARG(int64_t, depth) = 2;     // operations per image
  BATON_ARG(AugmentationSet, augmentation_set) = AugmentationSet::kAll;
};
// RandAugment (Cubuk et al. 2020) on tensors: after_dataloader, `depth` operations per image drawn
// uniformly from the set (identity, autocontrast, equalize-like contrast stretch, rotate, solarize,
// posterize, contrast, brightness, sharpness, shear x/y, translate x/y) at a random sign of the
// severity. Works on standardised inputs (each image mapped to [0, 1] and back).
class RandAugment : public Algorithm {
 public:
  ~RandAugment() override;
  explicit RandAugment(RandAugmentOptions options = RandAugmentOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// How progressive resizing makes a smaller image: resize (bilinear) or crop (a random crop).
enum class ResizeMode { kResize, kCrop };
BATON_ENUM_NAMES(ResizeMode, {ResizeMode::kResize, "resize"}, {ResizeMode::kCrop, "crop"})

class ProgressiveResizingOptions {
  BATON_ARG(ResizeMode, mode) = ResizeMode::kResize;
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
  ~ProgressiveResizing() override;
  explicit ProgressiveResizing(ProgressiveResizingOptions options = ProgressiveResizingOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  // The scale at a fraction of the run.
  double scale_at(double elapsed) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
