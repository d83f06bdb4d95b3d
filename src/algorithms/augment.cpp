// Algorithms that change inputs and targets: label smoothing, MixUp, CutMix, CutOut, ColOut,
// RandAugment, progressive resizing.
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/algorithms/augment.h"
#include "baton/core/logger.h"
#include "common.h"

namespace baton {

namespace F = torch::nn::functional;

// ---- LabelSmoothing -------------------------------------------------------------------------

struct LabelSmoothing::Impl {
  LabelSmoothingOptions options_;
  at::Tensor original_;
};

LabelSmoothing::~LabelSmoothing() = default;

LabelSmoothing::LabelSmoothing(LabelSmoothingOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  if (!(impl_->options_.smoothing() >= 0.0 && impl_->options_.smoothing() < 1.0)) {
    throw std::invalid_argument("smoothing must be in [0, 1), got " + std::to_string(impl_->options_.smoothing()));
  }
}

bool LabelSmoothing::match(Event event, const State& /*state*/) {
  return event == Event::kBeforeLoss || event == Event::kAfterLoss;
}

std::optional<int> LabelSmoothing::apply(Event event, State& state, Logger& /*logger*/) {
  if (event == Event::kBeforeLoss) {
    impl_->original_ = state.batch.target;
    const at::Tensor soft = detail::soft_targets(state.batch.target, state.outputs.size(1));
    state.batch.target =
        soft * (1.0 - impl_->options_.smoothing()) + impl_->options_.smoothing() / static_cast<double>(soft.size(1));
  } else if (impl_->original_.defined()) {
    state.batch.target = impl_->original_;
    impl_->original_ = at::Tensor();
  }
  return std::nullopt;
}

// ---- MixUp and CutMix -----------------------------------------------------------------------

namespace {

// A Beta(alpha, alpha) draw from LibTorch's generator.
double sample_beta(double alpha) {
  if (alpha <= 0.0) return 0.0;
  const at::Tensor concentration = torch::full({2}, alpha, torch::kDouble);
  return at::_sample_dirichlet(concentration, at::detail::getDefaultCPUGenerator())[0].item<double>();
}

}  // namespace

struct MixUp::Impl {
  MixOptions options_;
  double mixing_ = 0.0;  // the weight of the permuted examples
  at::Tensor permutation_;
  at::Tensor original_;
};

MixUp::~MixUp() = default;

bool MixUp::interpolate_loss() const { return impl_->options_.interpolate_loss(); }
double MixUp::mixing() const { return impl_->mixing_; }

MixUp::MixUp(MixOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  if (impl_->options_.alpha() < 0.0)
    throw std::invalid_argument("alpha must be at least 0, got " + std::to_string(impl_->options_.alpha()));
}

bool MixUp::match(Event event, const State& /*state*/) {
  if (event == Event::kBeforeForward) return true;
  if (impl_->options_.interpolate_loss()) return event == Event::kBeforeBackward;
  return event == Event::kBeforeLoss || event == Event::kAfterLoss;
}

void MixUp::mix_inputs(State& state) {
  const double lambda = sample_beta(impl_->options_.alpha());
  impl_->mixing_ = std::min(lambda, 1.0 - lambda);  // the original example stays the main one
  const at::Tensor& x = state.batch.input;
  state.batch.input = x * (1.0 - impl_->mixing_) + x.index_select(0, impl_->permutation_) * impl_->mixing_;
}

void CutMix::mix_inputs(State& state) {
  detail::require_images(state.batch.input, "CutMix");
  const double lambda = sample_beta(impl_->options_.alpha());
  const int64_t h = state.batch.input.size(2);
  const int64_t w = state.batch.input.size(3);
  const double cut = std::sqrt(1.0 - lambda);
  const auto cut_h = static_cast<int64_t>(std::round(static_cast<double>(h) * cut));
  const auto cut_w = static_cast<int64_t>(std::round(static_cast<double>(w) * cut));
  // The box's centre: anywhere (the box may be clipped), or where the whole box fits.
  auto centre = [&](int64_t side, int64_t len) {
    if (impl_->options_.uniform_sampling() || len >= side) return torch::randint(side, {1}).item<int64_t>();
    return len / 2 + torch::randint(side - len + 1, {1}).item<int64_t>();
  };
  const int64_t cy = centre(h, cut_h);
  const int64_t cx = centre(w, cut_w);
  const int64_t y0 = std::clamp<int64_t>(cy - cut_h / 2, 0, h);
  const int64_t y1 = std::clamp<int64_t>(cy - cut_h / 2 + cut_h, 0, h);
  const int64_t x0 = std::clamp<int64_t>(cx - cut_w / 2, 0, w);
  const int64_t x1 = std::clamp<int64_t>(cx - cut_w / 2 + cut_w, 0, w);
  at::Tensor mixed = state.batch.input.clone();
  using torch::indexing::Slice;
  mixed.index_put_(
      {Slice(), Slice(), Slice(y0, y1), Slice(x0, x1)},
      state.batch.input.index_select(0, impl_->permutation_).index({Slice(), Slice(), Slice(y0, y1), Slice(x0, x1)}));
  state.batch.input = mixed;
  impl_->mixing_ = static_cast<double>((y1 - y0) * (x1 - x0)) / static_cast<double>(h * w);
}

CutMix::CutMix(MixOptions options) : MixUp(options) {}

std::optional<int> MixUp::apply(Event event, State& state, Logger& /*logger*/) {
  switch (event) {
    case Event::kBeforeForward:
      impl_->permutation_ = detail::on_device_of(state.batch.input, torch::randperm(state.batch.size(), torch::kLong));
      mix_inputs(state);
      break;
    case Event::kBeforeLoss: {
      impl_->original_ = state.batch.target;
      const at::Tensor soft = detail::soft_targets(state.batch.target, state.outputs.size(1));
      state.batch.target = soft * (1.0 - impl_->mixing_) + soft.index_select(0, impl_->permutation_) * impl_->mixing_;
      break;
    }
    case Event::kAfterLoss:
      if (impl_->original_.defined()) state.batch.target = impl_->original_;
      impl_->original_ = at::Tensor();
      break;
    case Event::kBeforeBackward: {
      Model& model = detail::model_of(state, name());
      const Batch permuted{state.batch.input, state.batch.target.index_select(0, impl_->permutation_)};
      AutocastGuard autocast(state.precision, state.device.type());
      state.loss = state.loss * (1.0 - impl_->mixing_) + model.loss(state.outputs, permuted) * impl_->mixing_;
      break;
    }
    default: break;
  }
  return std::nullopt;
}

// ---- CutOut ---------------------------------------------------------------------------------

CutOut::CutOut(CutOutOptions options) : options_(options) {
  if (options_.num_holes() < 1) throw std::invalid_argument("num_holes must be at least 1");
  if (options_.length() <= 0.0) throw std::invalid_argument("length must be positive");
}

bool CutOut::match(Event event, const State& /*state*/) { return event == Event::kAfterDataloader; }

std::optional<int> CutOut::apply(Event /*event*/, State& state, Logger& /*logger*/) {
  at::Tensor& x = state.batch.input;
  detail::require_images(x, name());
  const int64_t n = x.size(0);
  const int64_t h = x.size(2);
  const int64_t w = x.size(3);
  const double side =
      options_.length() < 1.0 ? options_.length() * static_cast<double>(std::min(h, w)) : options_.length();
  const auto len = std::max<int64_t>(1, static_cast<int64_t>(std::round(side)));
  // Per image and hole, a square [y0, y0 + len) x [x0, x0 + len), as one mask.
  auto corners = [&](int64_t extent) {
    if (options_.uniform_sampling()) return torch::randint(extent, {n, options_.num_holes(), 1}) - len / 2;
    return torch::randint(std::max<int64_t>(1, extent - len + 1), {n, options_.num_holes(), 1});
  };
  const at::Tensor y0 = corners(h);
  const at::Tensor x0 = corners(w);
  const at::Tensor ys = torch::arange(h).view({1, 1, h});
  const at::Tensor xs = torch::arange(w).view({1, 1, w});
  const at::Tensor in_y = (ys >= y0) & (ys < y0 + len);                     // [n, holes, h]
  const at::Tensor in_x = (xs >= x0) & (xs < x0 + len);                     // [n, holes, w]
  const at::Tensor holes = (in_y.unsqueeze(3) & in_x.unsqueeze(2)).any(1);  // [n, h, w]
  x = x.masked_fill(detail::on_device_of(x, holes).unsqueeze(1), 0.0);
  return std::nullopt;
}

// ---- ColOut ---------------------------------------------------------------------------------

ColOut::ColOut(ColOutOptions options) : options_(options) {
  for (double p : {options_.p_row(), options_.p_col()}) {
    if (!(p >= 0.0 && p < 1.0)) throw std::invalid_argument("p_row and p_col must be in [0, 1)");
  }
}

bool ColOut::match(Event event, const State& /*state*/) { return event == Event::kAfterDataloader; }

std::optional<int> ColOut::apply(Event /*event*/, State& state, Logger& /*logger*/) {
  at::Tensor& x = state.batch.input;
  detail::require_images(x, name());
  auto keep = [&](int64_t extent, double p) {
    const auto kept = std::max<int64_t>(1, static_cast<int64_t>(std::round(static_cast<double>(extent) * (1.0 - p))));
    return detail::on_device_of(x, std::get<0>(torch::randperm(extent, torch::kLong).narrow(0, 0, kept).sort()));
  };
  x = x.index_select(2, keep(x.size(2), options_.p_row()))
          .index_select(3, keep(x.size(3), options_.p_col()))
          .contiguous();
  return std::nullopt;
}

// ---- RandAugment ----------------------------------------------------------------------------

namespace {

enum Op {
  kIdentity,
  kAutoContrast,
  kEqualize,
  kSolarize,
  kPosterize,
  kContrast,
  kBrightness,
  kSharpness,
  kRotate,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY
};

// Image ops on x in [0, 1], [n, C, H, W]; m in [0, 1] is the magnitude, sign in {-1, 1}.
at::Tensor intensity_op(int op, const at::Tensor& x, double m, const at::Tensor& sign) {
  const at::Tensor s = sign.view({-1, 1, 1, 1});
  switch (op) {
    case kAutoContrast: {
      const at::Tensor lo = x.amin({1, 2, 3}, true);
      const at::Tensor hi = x.amax({1, 2, 3}, true);
      return (x - lo) / (hi - lo).clamp_min(1e-6);
    }
    case kEqualize: {  // a contrast stretch between the 5th and 95th percentiles
      const at::Tensor flat = x.flatten(1);
      const at::Tensor lo = std::get<0>(flat.kthvalue(std::max<int64_t>(1, flat.size(1) / 20), 1)).view({-1, 1, 1, 1});
      const at::Tensor hi =
          std::get<0>(flat.kthvalue(std::max<int64_t>(1, flat.size(1) * 19 / 20), 1)).view({-1, 1, 1, 1});
      return ((x - lo) / (hi - lo).clamp_min(1e-6)).clamp(0, 1);
    }
    case kSolarize: {
      const double threshold = 1.0 - m;
      return torch::where(x >= threshold, 1.0 - x, x);
    }
    case kPosterize: {
      const double levels = std::pow(2.0, std::max(1.0, 8.0 - std::round(m * 4.0)));
      return torch::floor(x * (levels - 1.0)) / (levels - 1.0);
    }
    case kContrast: {
      const at::Tensor mean = x.mean({1, 2, 3}, true);
      return ((x - mean) * (1.0 + 0.9 * m * s) + mean).clamp(0, 1);
    }
    case kBrightness: return (x * (1.0 + 0.9 * m * s)).clamp(0, 1);
    case kSharpness: {
      const int64_t c = x.size(1);
      const at::Tensor kernel =
          torch::tensor({1.F, 1.F, 1.F, 1.F, 5.F, 1.F, 1.F, 1.F, 1.F}).view({1, 1, 3, 3}).to(x.options()) / 13.0;
      const at::Tensor smooth = F::conv2d(x, kernel.repeat({c, 1, 1, 1}), F::Conv2dFuncOptions().padding(1).groups(c));
      return (x + (x - smooth) * (0.9 * m) * s).clamp(0, 1);
    }
    default: return x;
  }
}

// The affine matrix (output -> input, normalised coordinates) of a geometric op, per image.
at::Tensor affine_of(int op, int64_t n, double m, const at::Tensor& sign) {
  at::Tensor theta = torch::eye(2, 3).repeat({n, 1, 1});
  const at::Tensor s = sign.to(torch::kFloat);
  switch (op) {
    case kRotate: {
      const at::Tensor angle = s * static_cast<float>(m * 30.0 * M_PI / 180.0);
      theta.select(2, 0).select(1, 0).copy_(angle.cos());
      theta.select(2, 1).select(1, 0).copy_(-angle.sin());
      theta.select(2, 0).select(1, 1).copy_(angle.sin());
      theta.select(2, 1).select(1, 1).copy_(angle.cos());
      break;
    }
    case kShearX: theta.select(2, 1).select(1, 0).copy_(s * static_cast<float>(m * 0.3)); break;
    case kShearY: theta.select(2, 0).select(1, 1).copy_(s * static_cast<float>(m * 0.3)); break;
    case kTranslateX:
      theta.select(2, 2).select(1, 0).copy_(s * static_cast<float>(m * 0.9));
      break;  // ~45% of the side
    case kTranslateY: theta.select(2, 2).select(1, 1).copy_(s * static_cast<float>(m * 0.9)); break;
    default: break;
  }
  return theta;
}

bool is_geometric(int op) { return op >= kRotate; }

}  // namespace

struct RandAugment::Impl {
  RandAugmentOptions options_;
  std::vector<int> ops_;
};

RandAugment::~RandAugment() = default;

RandAugment::RandAugment(RandAugmentOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  if (impl_->options_.severity() < 0 || impl_->options_.severity() > 10)
    throw std::invalid_argument("severity must be in 0..10");
  if (impl_->options_.depth() < 1) throw std::invalid_argument("depth must be at least 1");
  switch (impl_->options_.augmentation_set()) {
    case AugmentationSet::kAll:
      for (int op = kIdentity; op <= kTranslateY; ++op) impl_->ops_.push_back(op);
      break;
    case AugmentationSet::kGeometric:
      impl_->ops_ = {kIdentity, kRotate, kShearX, kShearY, kTranslateX, kTranslateY};
      break;
    case AugmentationSet::kIntensity:
      impl_->ops_ = {kIdentity, kAutoContrast, kEqualize, kSolarize, kPosterize, kContrast, kBrightness, kSharpness};
      break;
  }
}

bool RandAugment::match(Event event, const State& /*state*/) { return event == Event::kAfterDataloader; }

std::optional<int> RandAugment::apply(Event /*event*/, State& state, Logger& /*logger*/) {
  at::Tensor x = state.batch.input;
  detail::require_images(x, name());
  const int64_t n = x.size(0);
  // To [0, 1] per image, and back at the end.
  const at::Tensor lo = x.amin({1, 2, 3}, true);
  const at::Tensor range = (x.amax({1, 2, 3}, true) - lo).clamp_min(1e-6);
  x = (x - lo) / range;
  const double m = static_cast<double>(impl_->options_.severity()) / 10.0;
  for (int64_t d = 0; d < impl_->options_.depth(); ++d) {
    // Drawn and sorted on the CPU (no wait for the device); the images' indices go to theirs.
    const at::Tensor choice = torch::randint(static_cast<int64_t>(impl_->ops_.size()), {n}, torch::kLong);
    const at::Tensor sign = torch::randint(2, {n}).to(torch::kFloat) * 2.0 - 1.0;
    const at::Tensor sign_there = detail::on_device_of(x, sign);
    // Geometric ops of every image in one grid_sample; intensity ops per op on its images.
    at::Tensor theta = torch::eye(2, 3).repeat({n, 1, 1});
    bool any_geometric = false;
    for (std::size_t k = 0; k < impl_->ops_.size(); ++k) {
      const at::Tensor idx = (choice == static_cast<int64_t>(k)).nonzero().flatten();
      if (idx.numel() == 0 || impl_->ops_[k] == kIdentity) continue;
      if (is_geometric(impl_->ops_[k])) {
        theta.index_copy_(0, idx, affine_of(impl_->ops_[k], idx.numel(), m, sign.index_select(0, idx)));
        any_geometric = true;
      } else {
        const at::Tensor at = detail::on_device_of(x, idx);
        x.index_copy_(0, at, intensity_op(impl_->ops_[k], x.index_select(0, at), m, sign_there.index_select(0, at)));
      }
    }
    if (any_geometric) {
      const at::Tensor grid = F::affine_grid(detail::on_device_of(x, theta).to(x.scalar_type()), x.sizes(),
                                             /*align_corners=*/false);
      x = F::grid_sample(
          x, grid, F::GridSampleFuncOptions().mode(torch::kBilinear).padding_mode(torch::kZeros).align_corners(false));
    }
  }
  state.batch.input = x * range + lo;
  return std::nullopt;
}

// ---- ProgressiveResizing --------------------------------------------------------------------

struct ProgressiveResizing::Impl {
  ProgressiveResizingOptions options_;
  int64_t last_side_ = -1;
};

ProgressiveResizing::~ProgressiveResizing() = default;

ProgressiveResizing::ProgressiveResizing(ProgressiveResizingOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  if (!(impl_->options_.initial_scale() > 0.0 && impl_->options_.initial_scale() <= 1.0))
    throw std::invalid_argument("initial_scale must be in (0, 1]");
  if (impl_->options_.delay_fraction() < 0.0 || impl_->options_.finetune_fraction() < 0.0 ||
      impl_->options_.delay_fraction() + impl_->options_.finetune_fraction() > 1.0) {
    throw std::invalid_argument("delay_fraction and finetune_fraction must be at least 0 and add up to at most 1");
  }
  if (impl_->options_.size_increment() < 1) throw std::invalid_argument("size_increment must be at least 1");
}

bool ProgressiveResizing::match(Event event, const State& /*state*/) { return event == Event::kAfterDataloader; }

double ProgressiveResizing::scale_at(double elapsed) const {
  const double grow_end = 1.0 - impl_->options_.finetune_fraction();
  if (elapsed <= impl_->options_.delay_fraction()) return impl_->options_.initial_scale();
  if (elapsed >= grow_end) return 1.0;
  const double t = (elapsed - impl_->options_.delay_fraction()) / (grow_end - impl_->options_.delay_fraction());
  return impl_->options_.initial_scale() + (1.0 - impl_->options_.initial_scale()) * t;
}

std::optional<int> ProgressiveResizing::apply(Event /*event*/, State& state, Logger& logger) {
  at::Tensor& x = state.batch.input;
  detail::require_images(x, name());
  const double scale = scale_at(detail::elapsed(state));
  auto side_of = [&](int64_t full) {
    const double inc = static_cast<double>(impl_->options_.size_increment());
    const auto side = static_cast<int64_t>(std::round(static_cast<double>(full) * scale / inc) * inc);
    return std::clamp<int64_t>(side, std::min<int64_t>(impl_->options_.size_increment(), full), full);
  };
  const int64_t h = side_of(x.size(2));
  const int64_t w = side_of(x.size(3));
  if (h != x.size(2) || w != x.size(3)) {
    if (impl_->options_.mode() == ResizeMode::kResize) {
      x = F::interpolate(
          x, F::InterpolateFuncOptions().size(std::vector<int64_t>{h, w}).mode(torch::kBilinear).align_corners(false));
    } else {
      const int64_t y0 = torch::randint(x.size(2) - h + 1, {1}).item<int64_t>();
      const int64_t x0 = torch::randint(x.size(3) - w + 1, {1}).item<int64_t>();
      x = x.narrow(2, y0, h).narrow(3, x0, w).contiguous();
    }
  }
  if (h != impl_->last_side_) logger.log_metrics({{"progressive_resizing/side", static_cast<double>(h)}});
  impl_->last_side_ = h;
  return std::nullopt;
}

}  // namespace baton
