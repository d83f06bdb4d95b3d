// The zoo's gpt: a decoder-only transformer in GPT-2's layout (nanoGPT's initialisation).
#include <cmath>
#include <stdexcept>

#include <torch/torch.h>
#include <torch/version.h>

#include "baton/core/options.h"
#include "models/nets.h"

namespace baton {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

// softmax(q kᵀ / √d + causal mask) v over [N, heads, T, d]; the fused kernels on LibTorch 2.x.
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, {}, dropout, /*is_causal=*/true);
#else
  const int64_t t = q.size(-2);
  at::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  const at::Tensor future = torch::ones({t, t}, q.options().dtype(torch::kBool)).triu(1);
  at::Tensor weights = torch::softmax(scores.masked_fill(future, -std::numeric_limits<float>::infinity()), -1);
  if (dropout > 0) weights = F::dropout(weights, F::DropoutFuncOptions().p(dropout).training(true));
  return torch::matmul(weights.to(v.scalar_type()), v);
#endif
}

struct SelfAttentionImpl : nn::Module {
  SelfAttentionImpl(int64_t width, int64_t heads, double dropout) : heads(heads), dropout(dropout) {
    qkv = register_module("qkv", nn::Linear(width, 3 * width));
    proj = register_module("proj", nn::Linear(width, width));
  }
  at::Tensor forward(const at::Tensor& x) {
    const int64_t n = x.size(0), t = x.size(1), c = x.size(2);
    const auto parts = qkv(x).view({n, t, 3, heads, c / heads}).permute({2, 0, 3, 1, 4}).unbind(0);
    const at::Tensor y = causal_attention(parts[0], parts[1], parts[2], is_training() ? dropout : 0.0);
    return F::dropout(proj(y.transpose(1, 2).reshape({n, t, c})),
                      F::DropoutFuncOptions().p(dropout).training(is_training()));
  }
  int64_t heads;
  double dropout;
  nn::Linear qkv{nullptr}, proj{nullptr};
};
TORCH_MODULE(SelfAttention);

struct BlockImpl : nn::Module {
  BlockImpl(int64_t width, int64_t heads, double dropout) : dropout(dropout) {
    ln1 = register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({width})));
    attn = register_module("attn", SelfAttention(width, heads, dropout));
    ln2 = register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({width})));
    fc = register_module("fc", nn::Linear(width, 4 * width));
    proj = register_module("proj", nn::Linear(4 * width, width));
  }
  at::Tensor forward(at::Tensor x) {
    x = x + attn(ln1(x));
    const at::Tensor h = proj(F::gelu(fc(ln2(x)), F::GELUFuncOptions().approximate("tanh")));
    return x + F::dropout(h, F::DropoutFuncOptions().p(dropout).training(is_training()));
  }
  double dropout;
  nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  SelfAttention attn{nullptr};
  nn::Linear fc{nullptr}, proj{nullptr};
};
TORCH_MODULE(Block);

struct GptImpl : nn::Module {
  GptImpl(int64_t vocab, int64_t context, const ModelOptions& spec) : nn::Module("Gpt"), context(context) {
    tokens = register_module("tokens", nn::Embedding(vocab, spec.width()));
    positions = register_module("positions", nn::Embedding(context, spec.width()));
    for (int64_t i = 0; i < spec.layers(); ++i) blocks->push_back(Block(spec.width(), spec.heads(), spec.dropout()));
    register_module("blocks", blocks);
    ln = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({spec.width()})));
    initialize(spec.layers());
  }
  // GPT-2's: N(0, 0.02) weights, zero biases, the residual projections scaled by 1/√(2·layers).
  void initialize(int64_t layers) {
    torch::NoGradGuard no_grad;
    for (auto& p : named_parameters()) {
      const std::string& name = p.key();
      at::Tensor& w = p.value();
      if (name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0) {
        w.zero_();
      } else if (name.find(".ln") != std::string::npos || name.rfind("ln.", 0) == 0) {
        w.fill_(1.0);
      } else {
        const bool residual = name.size() > 11 && name.compare(name.size() - 11, 11, "proj.weight") == 0;
        w.normal_(0.0, residual ? 0.02 / std::sqrt(2.0 * static_cast<double>(layers)) : 0.02);
      }
    }
  }
  at::Tensor forward(const at::Tensor& x) {
    const int64_t t = x.size(1);
    if (t > context) {
      throw std::invalid_argument("gpt: a window of " + std::to_string(t) + " tokens is longer than its context of " +
                                  std::to_string(context));
    }
    at::Tensor h = tokens(x) + positions(torch::arange(t, x.options().dtype(torch::kLong)));
    h = ln(blocks->forward(h));
    return F::linear(h, tokens->weight);  // weight tying: the output layer is the token embedding
  }
  int64_t context;
  nn::Embedding tokens{nullptr}, positions{nullptr};
  nn::Sequential blocks;
  nn::LayerNorm ln{nullptr};
};
TORCH_MODULE(Gpt);

}  // namespace

std::shared_ptr<Model> make_gpt(const ModelOptions& spec) {
  auto need = [](bool ok, const char* key, const std::string& why) {
    if (!ok) throw OptionError(key, "model 'gpt': " + why);
  };
  if (!(spec.input_shape().size() == 1 && spec.input_shape()[0] >= 1)) {
    throw std::invalid_argument(
        "model 'gpt': needs windows of tokens (data.dataset: text or tokens), but the data has shape " +
        c10::str(at::IntArrayRef(spec.input_shape())));
  }
  constexpr int64_t kMax = 1 << 16;  // more is a typo: 65,536 blocks or a 65,536-wide token vector
  need(spec.layers() >= 1 && spec.layers() <= kMax, "layers", "layers must be from 1 to " + std::to_string(kMax));
  need(spec.heads() >= 1 && spec.heads() <= kMax, "heads", "heads must be from 1 to " + std::to_string(kMax));
  need(spec.width() >= spec.heads() && spec.width() <= kMax && spec.width() % spec.heads() == 0, "width",
       "width " + std::to_string(spec.width()) + " must be a multiple of heads " + std::to_string(spec.heads()) +
           " (at most " + std::to_string(kMax) + ")");
  need(spec.dropout() >= 0 && spec.dropout() < 1, "dropout", "dropout must be in [0, 1)");
  return std::make_shared<Classifier>(Gpt(spec.num_classes(), spec.input_shape()[0], spec).ptr());
}

}  // namespace baton
