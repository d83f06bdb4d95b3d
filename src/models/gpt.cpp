// The zoo's gpt: a decoder-only transformer in GPT-2's layout (nanoGPT's initialisation).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/core/options.h"
#include "baton/models/surgery.h"
#include "models/attention.h"
#include "models/nets.h"

namespace baton {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

struct SelfAttentionImpl : nn::Module {
  SelfAttentionImpl(int64_t width, int64_t heads, double dropout) : heads(heads), dropout(dropout) {
    qkv = register_module("qkv", nn::Linear(width, 3 * width));
    proj = register_module("proj", nn::Linear(width, width));
  }
  at::Tensor forward(const at::Tensor& x) {
    // The batch dimension as -1, not a number: a traced model (baton export) takes any batch size.
    const int64_t t = x.size(1), c = x.size(2);
    const auto parts = qkv(x).view({-1, t, 3, heads, c / heads}).permute({2, 0, 3, 1, 4}).unbind(0);
    const at::Tensor y = detail::causal_attention(parts[0], parts[1], parts[2], is_training() ? dropout : 0.0);
    return F::dropout(proj(y.transpose(1, 2).reshape({-1, t, c})),
                      F::DropoutFuncOptions().p(dropout).training(is_training()));
  }
  int64_t heads;
  double dropout;
  nn::Linear qkv{nullptr}, proj{nullptr};
};
TORCH_MODULE(SelfAttention);

struct BlockImpl : nn::Module {
  BlockImpl(int64_t width, int64_t heads, int64_t mlp_ratio, double dropout) : dropout(dropout) {
    ln1 = register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({width})));
    attn = register_module("attn", SelfAttention(width, heads, dropout));
    ln2 = register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({width})));
    fc = register_module("fc", nn::Linear(width, mlp_ratio * width));
    proj = register_module("proj", nn::Linear(mlp_ratio * width, width));
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

// Embeddings, `blocks` (a Stack of them, or a space's Repeat), the final LayerNorm, the tied output.
struct GptImpl : nn::Module {
  GptImpl(int64_t vocab, int64_t context, int64_t width, nn::AnyModule blocks)
      : nn::Module("Gpt"), context(context), blocks(std::move(blocks)) {
    tokens = register_module("tokens", nn::Embedding(vocab, width));
    positions = register_module("positions", nn::Embedding(context, width));
    register_module("blocks", this->blocks.ptr());
    ln = register_module("ln", nn::LayerNorm(nn::LayerNormOptions({width})));
    int64_t layers = 0;
    for (const auto& m : modules(/*include_self=*/false)) layers += dynamic_cast<BlockImpl*>(m.get()) ? 1 : 0;
    initialize(std::max<int64_t>(layers, 1));
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
    h = ln(blocks.forward<at::Tensor>(h));
    return F::linear(h, tokens->weight);  // weight tying: the output layer is the token embedding
  }
  int64_t context;
  nn::Embedding tokens{nullptr}, positions{nullptr};
  nn::AnyModule blocks;
  nn::LayerNorm ln{nullptr};
};
TORCH_MODULE(Gpt);

// A gpt (or gpt_space) needs windows of tokens: [context].
void require_tokens(const std::string& name, const ModelOptions& spec) {
  if (!(spec.input_shape().size() == 1 && spec.input_shape()[0] >= 1)) {
    throw std::invalid_argument("model '" + name +
                                "': needs windows of tokens (data.dataset: text or tokens), but the data has shape " +
                                c10::str(at::IntArrayRef(spec.input_shape())));
  }
}

}  // namespace

std::shared_ptr<Model> make_gpt(const ModelOptions& spec) {
  auto need = [](bool ok, const char* key, const std::string& why) {
    if (!ok) throw OptionError(key, "model 'gpt': " + why);
  };
  require_tokens("gpt", spec);
  constexpr int64_t kMax = 1 << 16;  // more is a typo: 65,536 blocks or a 65,536-wide token vector
  need(spec.layers() >= 1 && spec.layers() <= kMax, "layers", "layers must be from 1 to " + std::to_string(kMax));
  need(spec.heads() >= 1 && spec.heads() <= kMax, "heads", "heads must be from 1 to " + std::to_string(kMax));
  need(spec.width() >= spec.heads() && spec.width() <= kMax && spec.width() % spec.heads() == 0, "width",
       "width " + std::to_string(spec.width()) + " must be a multiple of heads " + std::to_string(spec.heads()) +
           " (at most " + std::to_string(kMax) + ")");
  need(spec.dropout() >= 0 && spec.dropout() < 1, "dropout", "dropout must be in [0, 1)");
  need(spec.mlp_ratio() >= 1 && spec.mlp_ratio() <= 64, "mlp_ratio", "mlp_ratio must be from 1 to 64");
  Stack blocks;
  for (int64_t i = 0; i < spec.layers(); ++i)
    blocks->push_back(Block(spec.width(), spec.heads(), spec.mlp_ratio(), spec.dropout()));
  return std::make_shared<Classifier>(
      Gpt(spec.num_classes(), spec.input_shape()[0], spec.width(), nn::AnyModule(blocks)).ptr());
}

nas::ModelSpace gpt_space(const ModelOptions& spec) {
  require_tokens("gpt_space", spec);
  if (!(spec.dropout() >= 0 && spec.dropout() < 1))
    throw OptionError("dropout", "model 'gpt_space': dropout must be in [0, 1)");
  const int64_t vocab = spec.num_classes(), context = spec.input_shape()[0];
  const double dropout = spec.dropout();
  return nas::ModelSpace(
      "gpt_space", spec.input_shape(),
      [=](nas::Space& s) {
        const auto width = s.value<int64_t>(nas::ValueChoice("width", {128, 192, 256}));
        const auto heads = s.value<int64_t>(nas::ValueChoice("heads", {2, 4, 8}));
        const auto ratio = s.value<int64_t>(nas::ValueChoice("mlp_ratio", {2, 3, 4}));
        auto blocks = s.repeat(nas::Repeat(
            "layers", {2, 4, 6}, [=](int64_t) { return nn::AnyModule(Block(width, heads, ratio, dropout)); }));
        return nn::AnyModule(Gpt(vocab, context, width, std::move(blocks)));
      },
      /*token_inputs=*/true);
}

}  // namespace baton
