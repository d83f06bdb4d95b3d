// Algorithms that change the model's structure or layout: channels-last, BlurPool,
// Squeeze-Excite, stochastic depth, ghost BatchNorm, low-precision GroupNorm and LayerNorm.
#include <cmath>
#include <memory>
#include <stdexcept>

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/torch.h>

#include "baton/algorithms/surgery.h"
#include "baton/core/logger.h"
#include "baton/models/surgery.h"
#include "baton/models/zoo.h"
#include "common.h"

namespace baton {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

namespace {

// ---- The modules surgery puts in --------------------------------------------------------------

// A [1, 1, 3, 3] binomial filter ([1 2 1] x [1 2 1] / 16), applied per channel.
at::Tensor blur(const at::Tensor& x, const at::Tensor& filter, int64_t stride) {
  const int64_t c = x.size(1);
  return F::conv2d(x, filter.to(x.scalar_type()).expand({c, 1, 3, 3}),
                   F::Conv2dFuncOptions().stride(stride).padding(1).groups(c));
}

at::Tensor binomial_filter() {
  const at::Tensor row = torch::tensor({1.F, 2.F, 1.F});
  return (row.view({3, 1}) * row.view({1, 3}) / 16.0).view({1, 1, 3, 3});
}

struct BlurConv2dImpl : nn::Module {
  BlurConv2dImpl(nn::Conv2d conv_in, bool first) : nn::Module("BlurConv2d"), blur_first(first) {
    stride = conv_in->options.stride()->at(0);
    conv_in->options.stride(1);  // the blur downsamples
    conv = register_module("conv", conv_in);
    filter = register_buffer("blur_filter", binomial_filter());
  }
  at::Tensor forward(const at::Tensor& x) {
    return blur_first ? conv(blur(x, filter, stride)) : blur(conv(x), filter, stride);
  }
  nn::Conv2d conv{nullptr};
  at::Tensor filter;
  int64_t stride = 1;
  bool blur_first = true;
};
TORCH_MODULE(BlurConv2d);

struct BlurMaxPool2dImpl : nn::Module {
  explicit BlurMaxPool2dImpl(const nn::MaxPool2dOptions& original) : nn::Module("BlurMaxPool2d") {
    stride = (*original.stride())[0];
    pool = register_module("pool", nn::MaxPool2d(nn::MaxPool2dOptions(original.kernel_size())
                                                     .stride(1)
                                                     .padding(original.padding())
                                                     .dilation(original.dilation())));
    filter = register_buffer("blur_filter", binomial_filter());
  }
  at::Tensor forward(const at::Tensor& x) { return blur(pool(x), filter, stride); }
  nn::MaxPool2d pool{nullptr};
  at::Tensor filter;
  int64_t stride = 2;
};
TORCH_MODULE(BlurMaxPool2d);

struct SqueezeExciteConv2dImpl : nn::Module {
  SqueezeExciteConv2dImpl(nn::Conv2d conv_in, int64_t latent) : nn::Module("SqueezeExciteConv2d") {
    const int64_t c = conv_in->options.out_channels();
    conv = register_module("conv", conv_in);
    squeeze = register_module("squeeze", nn::Linear(c, latent));
    excite = register_module("excite", nn::Linear(latent, c));
  }
  at::Tensor forward(const at::Tensor& x) {
    const at::Tensor y = conv(x);
    const at::Tensor w = torch::sigmoid(excite(torch::relu(squeeze(y.mean({2, 3})))));
    return y * w.unsqueeze(2).unsqueeze(3);
  }
  nn::Conv2d conv{nullptr};
  nn::Linear squeeze{nullptr}, excite{nullptr};
};
TORCH_MODULE(SqueezeExciteConv2d);

struct StochasticBlockImpl : nn::Module {
  StochasticBlockImpl(std::shared_ptr<ResidualBlockImpl> block_in, double rate)
      : nn::Module("StochasticBlock"), drop_rate(rate) {
    block = register_module("block", block_in);
  }
  at::Tensor forward(const at::Tensor& x) {
    if (!is_training()) return torch::relu(block->residual(x) * (1.0 - drop_rate) + block->shortcut(x));
    if (x.is_cuda()) {
      // Drawn on the device: no wait, and each replay of a CUDA graph draws again (a draw on the
      // host would be captured once, one set of dropped blocks forever). The residual is computed
      // either way, times 0 or 1: relu(0 + shortcut) is the dropped block's output.
      const at::Tensor keep = (torch::rand({1}, x.options().dtype(torch::kFloat)) >= drop_rate).to(x.scalar_type());
      return torch::relu(block->residual(x) * keep + block->shortcut(x));
    }
    if (torch::rand({1}).item<double>() < drop_rate) return torch::relu(block->shortcut(x));  // skipped: faster
    return block->forward(x);
  }
  std::shared_ptr<ResidualBlockImpl> block;
  double drop_rate;
};
TORCH_MODULE(StochasticBlock);

struct GhostBatchNorm2dImpl : nn::Module {
  GhostBatchNorm2dImpl(nn::BatchNorm2d bn, int64_t ghost) : nn::Module("GhostBatchNorm2d"), ghost_batch_size(ghost) {
    batchnorm = register_module("batchnorm", bn);
  }
  at::Tensor forward(const at::Tensor& x) {
    if (!is_training() || x.size(0) <= ghost_batch_size) return batchnorm(x);
    const auto chunks = x.split(ghost_batch_size);
    std::vector<at::Tensor> out;
    out.reserve(chunks.size());
    // Each group updates the running statistics; the momentum is shared out so that a batch moves
    // them about as much as one BatchNorm step would.
    const c10::optional<double> momentum = batchnorm->options.momentum();
    if (momentum) batchnorm->options.momentum(*momentum / static_cast<double>(chunks.size()));
    for (const auto& chunk : chunks) out.push_back(batchnorm(chunk));
    batchnorm->options.momentum(momentum);
    return torch::cat(out);
  }
  nn::BatchNorm2d batchnorm{nullptr};
  int64_t ghost_batch_size;
};
TORCH_MODULE(GhostBatchNorm2d);

// Under autocast on x's device, computes in its type with autocast's upcast to fp32 bypassed.
bool low_precision(const at::Tensor& x) { return autocast_enabled(x.device().type()); }
c10::DispatchKey autocast_key(const at::Tensor& x) {
  return x.is_cuda() ? c10::DispatchKey::AutocastCUDA : c10::DispatchKey::AutocastCPU;
}

// `norm(x, weight, bias)` computed in autocast's type with autocast's upcast to fp32 bypassed; the
// module `holder` as it is outside autocast.
template <typename Holder, typename Norm>
at::Tensor in_low_precision(Holder& holder, const at::Tensor& x, Norm norm) {
  if (!low_precision(x)) return holder(x);
  const auto dtype = autocast_dtype(x.device().type());
  c10::impl::ExcludeDispatchKeyGuard no_autocast(autocast_key(x));
  const auto cast = [&](const at::Tensor& t) { return t.defined() ? t.to(dtype) : at::Tensor(); };
  return norm(x.to(dtype), cast(holder->weight), cast(holder->bias));
}

struct LowPrecisionLayerNormLayerImpl : nn::Module {
  explicit LowPrecisionLayerNormLayerImpl(nn::LayerNorm ln) : nn::Module("LowPrecisionLayerNorm") {
    norm = register_module("norm", ln);
  }
  at::Tensor forward(const at::Tensor& x) {
    const auto& o = norm->options;
    return in_low_precision(norm, x, [&](const at::Tensor& v, const at::Tensor& w, const at::Tensor& b) {
      return at::layer_norm(v, o.normalized_shape(), w, b, o.eps());
    });
  }
  nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(LowPrecisionLayerNormLayer);

struct LowPrecisionGroupNormLayerImpl : nn::Module {
  explicit LowPrecisionGroupNormLayerImpl(nn::GroupNorm gn) : nn::Module("LowPrecisionGroupNorm") {
    norm = register_module("norm", gn);
  }
  at::Tensor forward(const at::Tensor& x) {
    const auto& o = norm->options;
    return in_low_precision(norm, x, [&](const at::Tensor& v, const at::Tensor& w, const at::Tensor& b) {
      return at::group_norm(v, o.num_groups(), w, b, o.eps());
    });
  }
  nn::GroupNorm norm{nullptr};
};
TORCH_MODULE(LowPrecisionGroupNormLayer);

// Applies `policy` to the state's model, brings the optimizers' parameter lists up to date and
// logs how many modules were replaced.
int operate(State& state, Logger& logger, const std::string& algorithm, const SurgeryPolicy& policy) {
  if (!state.model) throw std::invalid_argument(algorithm + ": no model");
  const int replaced = replace_modules(*state.model, policy);
  for (const auto& o : state.optimizers) sync_optimizer_params(*o, *state.model);
  logger.log_metrics({{"surgery/" + algorithm, static_cast<double>(replaced)}});
  return replaced;
}

template <typename Impl>
std::shared_ptr<Impl> as(nn::Module& m) {
  return std::dynamic_pointer_cast<Impl>(m.shared_from_this());
}

}  // namespace

// ---- ChannelsLast ---------------------------------------------------------------------------

namespace {

// NHWC strides even where .contiguous(ChannelsLast) would keep NCHW ones: for a single channel
// both layouts count as contiguous, and LibTorch then picks NCHW for the whole network after it
// (its max pooling is ~10x slower in NCHW).
at::Tensor nhwc(const at::Tensor& t) {
  at::Tensor out = at::empty(t.sizes(), t.options().memory_format(at::MemoryFormat::ChannelsLast));
  if (t.size(1) == 1 && t.numel() > 0) {
    // Make the channel stride 1, as a real NHWC tensor has.
    out = at::empty_strided(t.sizes(), {t.size(2) * t.size(3), 1, t.size(3), 1}, t.options());
  }
  return out.copy_(t);
}

}  // namespace

bool ChannelsLast::match(Event event, const State& /*state*/) {
  return event == Event::kInit || event == Event::kAfterDataloader || event == Event::kEvalBeforeForward ||
         event == Event::kPredictBeforeForward;
}

std::optional<int> ChannelsLast::apply(Event event, State& state, Logger& /*logger*/) {
  if (event == Event::kInit) {
    torch::NoGradGuard no_grad;
    for (auto& p : state.model->parameters()) {
      if (p.dim() == 4) p.set_data(nhwc(p));
    }
    return std::nullopt;
  }
  if (state.batch.input.defined() && state.batch.input.dim() == 4) {
    state.batch.input = nhwc(state.batch.input);
  }
  return std::nullopt;
}

// ---- BlurPool -------------------------------------------------------------------------------

struct BlurPool::Impl {
  BlurPoolOptions options_;
  int replaced_ = 0;
};

BlurPool::~BlurPool() = default;

int BlurPool::replaced() const { return impl_->replaced_; }

BlurPool::BlurPool(BlurPoolOptions options) : impl_(std::make_unique<Impl>()) { impl_->options_ = options; }

bool BlurPool::match(Event event, const State& /*state*/) { return event == Event::kInit; }

std::optional<int> BlurPool::apply(Event /*event*/, State& state, Logger& logger) {
  impl_->replaced_ =
      operate(state, logger, "blurpool", [&](const std::string&, nn::Module& child) -> std::optional<nn::AnyModule> {
        if (auto conv = as<nn::Conv2dImpl>(child); conv && impl_->options_.replace_convs()) {
          const auto& o = conv->options;
          const bool strided = (*o.stride())[0] > 1 || (*o.stride())[1] > 1;
          if (strided && o.in_channels() >= impl_->options_.min_channels() && (*o.stride())[0] == (*o.stride())[1]) {
            return nn::AnyModule(BlurConv2d(nn::Conv2d(conv), impl_->options_.blur_first()));
          }
        }
        if (auto pool = as<nn::MaxPool2dImpl>(child); pool && impl_->options_.replace_maxpools()) {
          return nn::AnyModule(BlurMaxPool2d(pool->options));
        }
        return std::nullopt;
      });
  return std::nullopt;
}

// ---- SqueezeExcite --------------------------------------------------------------------------

struct SqueezeExcite::Impl {
  SqueezeExciteOptions options_;
  int replaced_ = 0;
};

SqueezeExcite::~SqueezeExcite() = default;

int SqueezeExcite::replaced() const { return impl_->replaced_; }

SqueezeExcite::SqueezeExcite(SqueezeExciteOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  if (!(impl_->options_.latent_channels() > 0.0)) throw std::invalid_argument("latent_channels must be positive");
  if (impl_->options_.min_channels() < 1) throw std::invalid_argument("min_channels must be at least 1");
}

bool SqueezeExcite::match(Event event, const State& /*state*/) { return event == Event::kInit; }

std::optional<int> SqueezeExcite::apply(Event /*event*/, State& state, Logger& logger) {
  impl_->replaced_ = operate(
      state, logger, "squeeze_excite", [&](const std::string&, nn::Module& child) -> std::optional<nn::AnyModule> {
        auto conv = as<nn::Conv2dImpl>(child);
        if (!conv || conv->options.out_channels() < impl_->options_.min_channels()) return std::nullopt;
        const int64_t c = conv->options.out_channels();
        const auto latent =
            impl_->options_.latent_channels() < 1.0
                ? std::max<int64_t>(
                      1, static_cast<int64_t>(std::round(impl_->options_.latent_channels() * static_cast<double>(c))))
                : static_cast<int64_t>(impl_->options_.latent_channels());
        return nn::AnyModule(SqueezeExciteConv2d(nn::Conv2d(conv), latent));
      });
  return std::nullopt;
}

// ---- StochasticDepth ------------------------------------------------------------------------

struct StochasticDepth::Impl {
  StochasticDepthOptions options_;
  int replaced_ = 0;
};

StochasticDepth::~StochasticDepth() = default;

int StochasticDepth::replaced() const { return impl_->replaced_; }

StochasticDepth::StochasticDepth(StochasticDepthOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  if (!(impl_->options_.drop_rate() >= 0.0 && impl_->options_.drop_rate() < 1.0))
    throw std::invalid_argument("drop_rate must be in [0, 1)");
}

bool StochasticDepth::match(Event event, const State& /*state*/) { return event == Event::kInit; }

std::optional<int> StochasticDepth::apply(Event /*event*/, State& state, Logger& logger) {
  int64_t blocks = 0;
  for (const auto& m : state.model->modules()) blocks += std::dynamic_pointer_cast<ResidualBlockImpl>(m) ? 1 : 0;
  int64_t seen = 0;
  impl_->replaced_ = operate(
      state, logger, "stochastic_depth", [&](const std::string&, nn::Module& child) -> std::optional<nn::AnyModule> {
        auto block = as<ResidualBlockImpl>(child);
        if (!block) return std::nullopt;
        ++seen;
        const double rate = impl_->options_.drop_distribution() == DropDistribution::kLinear
                                ? impl_->options_.drop_rate() * static_cast<double>(seen) / static_cast<double>(blocks)
                                : impl_->options_.drop_rate();
        return nn::AnyModule(StochasticBlock(block, rate));
      });
  return std::nullopt;
}

// ---- GhostBatchNorm -------------------------------------------------------------------------

struct GhostBatchNorm::Impl {
  GhostBatchNormOptions options_;
  int replaced_ = 0;
};

GhostBatchNorm::~GhostBatchNorm() = default;

int GhostBatchNorm::replaced() const { return impl_->replaced_; }

GhostBatchNorm::GhostBatchNorm(GhostBatchNormOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  if (impl_->options_.ghost_batch_size() < 1) throw std::invalid_argument("ghost_batch_size must be at least 1");
}

bool GhostBatchNorm::match(Event event, const State& /*state*/) { return event == Event::kInit; }

std::optional<int> GhostBatchNorm::apply(Event /*event*/, State& state, Logger& logger) {
  impl_->replaced_ = operate(
      state, logger, "ghost_batchnorm", [&](const std::string&, nn::Module& child) -> std::optional<nn::AnyModule> {
        auto bn = as<nn::BatchNorm2dImpl>(child);
        if (!bn) return std::nullopt;
        return nn::AnyModule(GhostBatchNorm2d(nn::BatchNorm2d(bn), impl_->options_.ghost_batch_size()));
      });
  return std::nullopt;
}

// ---- Low-precision norms --------------------------------------------------------------------

namespace {

// Each `Impl` module (a norm) replaced by `Layer` built around it; returns how many.
template <typename Impl, typename Holder, typename Layer>
int replace_norms(State& state, Logger& logger, const std::string& algorithm) {
  return operate(state, logger, algorithm, [](const std::string&, nn::Module& child) -> std::optional<nn::AnyModule> {
    auto norm = as<Impl>(child);
    if (!norm) return std::nullopt;
    return nn::AnyModule(Layer(Holder(norm)));
  });
}

}  // namespace

bool LowPrecisionGroupNorm::match(Event event, const State& /*state*/) { return event == Event::kInit; }

std::optional<int> LowPrecisionGroupNorm::apply(Event /*event*/, State& state, Logger& logger) {
  replaced_ = replace_norms<nn::GroupNormImpl, nn::GroupNorm, LowPrecisionGroupNormLayer>(state, logger,
                                                                                          "low_precision_groupnorm");
  return std::nullopt;
}

bool LowPrecisionLayerNorm::match(Event event, const State& /*state*/) { return event == Event::kInit; }

std::optional<int> LowPrecisionLayerNorm::apply(Event /*event*/, State& state, Logger& logger) {
  replaced_ = replace_norms<nn::LayerNormImpl, nn::LayerNorm, LowPrecisionLayerNormLayer>(state, logger,
                                                                                          "low_precision_layernorm");
  return std::nullopt;
}

}  // namespace baton
