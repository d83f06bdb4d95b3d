// Algorithms that change the model's modules and layout (src/algorithms/surgery.cpp): channels-last,
// BlurPool, squeeze-excite, stochastic depth, ghost batch norm, low-precision norms. The library:
// algorithms.h.
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
  ~BlurPool() override;
  explicit BlurPool(BlurPoolOptions options = BlurPoolOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool required_on_load() const override { return true; }
  int replaced() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
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
  ~SqueezeExcite() override;
  explicit SqueezeExcite(SqueezeExciteOptions options = SqueezeExciteOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool required_on_load() const override { return true; }
  int replaced() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// linear: block l of L drops with drop_rate * l / L; uniform: every block with drop_rate.
enum class DropDistribution { kLinear, kUniform };
BATON_ENUM_NAMES(DropDistribution, {DropDistribution::kLinear, "linear"}, {DropDistribution::kUniform, "uniform"})

class StochasticDepthOptions {
  BATON_ARG(double, drop_rate) = 0.2;  // the last block's drop probability
  BATON_ARG(DropDistribution, drop_distribution) = DropDistribution::kLinear;
};
// Stochastic depth (Huang et al. 2016) on ResNet basic blocks. init: each block is wrapped; in
// training its residual branch is skipped with its drop probability, at evaluation it is scaled by
// the keep probability. Required on load.
class StochasticDepth : public Algorithm {
 public:
  ~StochasticDepth() override;
  explicit StochasticDepth(StochasticDepthOptions options = StochasticDepthOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool required_on_load() const override { return true; }
  int replaced() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class GhostBatchNormOptions {
  BATON_ARG(int64_t, ghost_batch_size) = 32;  // examples per normalisation group
};
// Ghost BatchNorm (Hoffer et al. 2017). init: BatchNorm2d layers normalise each group of
// ghost_batch_size examples on its own during training (evaluation unchanged). Required on load.
class GhostBatchNorm : public Algorithm {
 public:
  ~GhostBatchNorm() override;
  explicit GhostBatchNorm(GhostBatchNormOptions options = GhostBatchNormOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool required_on_load() const override { return true; }
  int replaced() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
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
