// Hugging Face's GPT-2 and Llama (include/baton/models/hf.h): config.json read, the modules built
// with Hugging Face's parameter names, the safetensors loaded into them.
#include "baton/models/hf.h"
#include "baton/models/lora.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <torch/torch.h>
#include <torch/version.h>
#include <nlohmann/json.hpp>

#include "baton/io/file.h"
#include "baton/io/write.h"
#include "baton/models/safetensors.h"
#include "baton/models/surgery.h"
#include "models/attention.h"
#include "models/hf_step.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
namespace nn = torch::nn;
namespace F = torch::nn::functional;
using json = nlohmann::json;

// ---- config.json ----

// Reads keys of one config file, each error naming the file and the key.
class ConfigReader {
 public:
  ConfigReader(std::string file, json config) : file_(std::move(file)), config_(std::move(config)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw std::invalid_argument(file_ + ": " + key + ": " + why);
  }
  bool has(const std::string& key) const { return config_.contains(key) && !config_.at(key).is_null(); }
  const json& at(const std::string& key) const { return config_.at(key); }

  int64_t integer(const std::string& key, int64_t min, int64_t max) const {
    if (!has(key)) fail(key, "missing (the architecture needs it)");
    return integer_of(key, config_.at(key), min, max);
  }
  int64_t integer(const std::string& key, int64_t min, int64_t max, int64_t fallback) const {
    return has(key) ? integer_of(key, config_.at(key), min, max) : fallback;
  }
  double number(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    if (!config_.at(key).is_number()) fail(key, "expected a number, got " + config_.at(key).dump());
    return config_.at(key).get<double>();
  }
  bool flag(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!config_.at(key).is_boolean()) fail(key, "expected true or false, got " + config_.at(key).dump());
    return config_.at(key).get<bool>();
  }
  std::string text(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!config_.at(key).is_string()) fail(key, "expected a string, got " + config_.at(key).dump());
    return config_.at(key).get<std::string>();
  }
  // A key whose only value baton implements is `expected` (or absent).
  void require_value(const std::string& key, const json& expected, const std::string& why) const {
    if (has(key) && config_.at(key) != expected) fail(key, config_.at(key).dump() + " is not implemented: " + why);
  }
  // A token id, or a list of them (the first is taken): -1 for none.
  int64_t token(const std::string& key) const {
    if (!has(key)) return -1;
    const json& v = config_.at(key);
    if (v.is_array()) return v.empty() ? -1 : integer_of(key, v.front(), 0, INT32_MAX);
    return integer_of(key, v, 0, INT32_MAX);
  }

 private:
  int64_t integer_of(const std::string& key, const json& v, int64_t min, int64_t max) const {
    if (!v.is_number_integer()) fail(key, "expected an integer, got " + v.dump());
    const auto value = v.get<int64_t>();
    if (value < min || value > max) {
      fail(key, std::to_string(value) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return value;
  }
  std::string file_;
  json config_;
};

constexpr int64_t kMaxDim = 1 << 20;

void read_gpt2(const ConfigReader& r, HfConfig& c) {
  c.family = "gpt2";
  c.vocab_size = r.integer("vocab_size", 1, kMaxDim * 4);
  c.hidden_size = r.integer("n_embd", 1, kMaxDim);
  c.layers = r.integer("n_layer", 1, 4096);
  c.heads = r.integer("n_head", 1, 4096);
  if (c.hidden_size % c.heads != 0) r.fail("n_embd", "must be a multiple of n_head");
  c.kv_heads = c.heads;
  c.head_dim = c.hidden_size / c.heads;
  c.intermediate_size = r.integer("n_inner", 1, kMaxDim * 4, 4 * c.hidden_size);
  c.context = r.integer("n_positions", 1, kMaxDim);
  c.norm_eps = r.number("layer_norm_epsilon", 1e-5);
  c.activation = r.text("activation_function", "gelu_new");
  c.tie_word_embeddings = r.flag("tie_word_embeddings", true);
  c.attention_bias = true;
  c.mlp_bias = true;
  c.dropout = r.number("resid_pdrop", 0.1);
  c.embedding_dropout = r.number("embd_pdrop", 0.1);
  c.attention_dropout = r.number("attn_pdrop", 0.1);
  r.require_value("scale_attn_weights", true, "GPT-2's attention is scaled by 1/sqrt(head_dim)");
  r.require_value("scale_attn_by_inverse_layer_idx", false, "baton scales no layer's attention by its index");
  r.require_value("add_cross_attention", false, "a decoder-only model has no cross-attention");
}

// rope_parameters (transformers 5) or rope_theta + rope_scaling (4.x).
void read_rope(const ConfigReader& r, HfConfig& c) {
  c.rope_theta = r.number("rope_theta", 10000.0);
  const char* key = r.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  if (!r.has(key)) return;
  if (!r.at(key).is_object()) r.fail(key, "expected an object, got " + r.at(key).dump());
  const ConfigReader rope(std::string(key), r.at(key));
  c.rope_theta = rope.number("rope_theta", c.rope_theta);
  c.rope_type = rope.text("rope_type", rope.text("type", "default"));
  if (c.rope_type == "default") return;
  c.rope_factor = rope.number("factor", 1.0);
  if (!(c.rope_factor > 0)) r.fail(key, "factor must be positive");
  if (c.rope_type == "linear") return;
  if (c.rope_type != "llama3") {
    r.fail(std::string(key) + ".rope_type",
           "'" + c.rope_type + "' is not implemented (baton implements default, linear and llama3)");
  }
  c.rope_low_freq_factor = rope.number("low_freq_factor", 1.0);
  c.rope_high_freq_factor = rope.number("high_freq_factor", 4.0);
  if (!(c.rope_high_freq_factor > c.rope_low_freq_factor)) r.fail(key, "high_freq_factor must exceed low_freq_factor");
  c.rope_original_context = rope.integer("original_max_position_embeddings", 1, kMaxDim);
}

void read_llama(const ConfigReader& r, HfConfig& c, const std::string& model_type) {
  c.family = "llama";
  c.vocab_size = r.integer("vocab_size", 1, kMaxDim * 4);
  c.hidden_size = r.integer("hidden_size", 1, kMaxDim);
  c.layers = r.integer("num_hidden_layers", 1, 4096);
  c.heads = r.integer("num_attention_heads", 1, 4096);
  c.kv_heads = r.integer("num_key_value_heads", 1, c.heads, c.heads);
  if (c.heads % c.kv_heads != 0) r.fail("num_key_value_heads", "must divide num_attention_heads");
  c.head_dim = r.integer("head_dim", 1, kMaxDim, c.hidden_size / c.heads);
  if (c.head_dim % 2 != 0) r.fail("head_dim", "rotary embeddings need an even head_dim");
  c.intermediate_size = r.integer("intermediate_size", 1, kMaxDim * 4);
  c.context = r.integer("max_position_embeddings", 1, kMaxDim, 2048);
  c.norm_eps = r.number("rms_norm_eps", 1e-6);
  c.activation = r.text("hidden_act", "silu");
  c.tie_word_embeddings = r.flag("tie_word_embeddings", false);
  c.attention_bias = r.flag("attention_bias", false);
  c.qkv_bias = model_type == "qwen2";  // Qwen2: q, k and v with biases, o without
  c.mlp_bias = r.flag("mlp_bias", false);
  c.attention_dropout = r.number("attention_dropout", 0.0);
  read_rope(r, c);
  if (model_type == "mistral" && r.has("sliding_window") && r.integer("sliding_window", 0, INT64_MAX) < c.context) {
    r.fail("sliding_window", "a sliding window shorter than max_position_embeddings is not implemented");
  }
  if (model_type == "qwen2") r.require_value("use_sliding_window", false, "Qwen2's sliding window");
  if (r.has("layer_types")) {
    for (const auto& kind : r.at("layer_types")) {
      if (kind != "full_attention") r.fail("layer_types", kind.dump() + " is not implemented (full_attention only)");
    }
  }
}

// The architectures baton builds, and the layout of each.
const std::map<std::string, std::string>& architectures() {
  static const std::map<std::string, std::string> known = {{"GPT2LMHeadModel", "gpt2"},
                                                           {"LlamaForCausalLM", "llama"},
                                                           {"MistralForCausalLM", "mistral"},
                                                           {"Qwen2ForCausalLM", "qwen2"}};
  return known;
}

// ---- the modules ----

// GPT-2's Conv1D: a linear layer whose weight is stored [in, out], which LoRA can adapt.
AdaptableLinear conv1d(int64_t in, int64_t out) {
  AdaptableLinearOptions o(in, out);
  o.transposed = true;
  return AdaptableLinear(o);
}

at::Tensor activate(const std::string& kind, const at::Tensor& x) {
  if (kind == "gelu_new" || kind == "gelu_pytorch_tanh" || kind == "gelu_fast") {
    return F::gelu(x, F::GELUFuncOptions().approximate("tanh"));
  }
  if (kind == "gelu") return F::gelu(x);
  if (kind == "relu") return torch::relu(x);
  return torch::silu(x);  // silu, swish
}

void check_activation(const std::string& file, const std::string& key, const std::string& kind) {
  static const std::set<std::string> known = {"gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu", "relu", "silu",
                                              "swish"};
  if (!known.count(kind)) {
    throw std::invalid_argument(file + ": " + key + ": '" + kind +
                                "' is not implemented (gelu_new, gelu_pytorch_tanh, gelu_fast, gelu, relu, silu)");
  }
}

at::Tensor drop(const at::Tensor& x, double p, bool training) {
  return p > 0 && training ? F::dropout(x, F::DropoutFuncOptions().p(p).training(true)) : x;
}

// [N, T, heads * d] -> [N, heads, T, d]. No size of the input is written into the ops: a trace
// (TorchScript export) takes any batch size.
at::Tensor split_heads(const at::Tensor& x, int64_t heads) { return x.unflatten(-1, {heads, -1}).transpose(1, 2); }
// [N, heads, T, d] -> [N, T, heads * d]
at::Tensor merge_heads(const at::Tensor& x) { return x.transpose(1, 2).flatten(2); }

// New keys and values after the cached ones.
void append(detail::LayerCache& cache, const at::Tensor& k, const at::Tensor& v) {
  const int64_t past = cache.k.defined() ? cache.k.size(2) : 0, length = past + k.size(2);
  if (cache.capacity >= length) {
    if (!cache.k_buffer.defined()) {
      auto sizes = k.sizes().vec();
      sizes[2] = cache.capacity;
      cache.k_buffer = torch::empty(sizes, k.options());
      cache.v_buffer = torch::empty(sizes, v.options());
    }
    cache.k_buffer.narrow(2, past, k.size(2)).copy_(k);
    cache.v_buffer.narrow(2, past, v.size(2)).copy_(v);
    cache.k = cache.k_buffer.narrow(2, 0, length);
    cache.v = cache.v_buffer.narrow(2, 0, length);
    return;
  }
  cache.k = cache.k.defined() ? torch::cat({cache.k, k}, 2) : k;
  cache.v = cache.v.defined() ? torch::cat({cache.v, v}, 2) : v;
}

struct Gpt2AttentionImpl : nn::Module {
  explicit Gpt2AttentionImpl(const HfConfig& c) : heads(c.heads), width(c.hidden_size) {
    c_attn = register_module("c_attn", conv1d(c.hidden_size, 3 * c.hidden_size));
    c_proj = register_module("c_proj", conv1d(c.hidden_size, c.hidden_size));
    attention_dropout = c.attention_dropout;
    dropout_p = c.dropout;
  }
  at::Tensor forward(const at::Tensor& x) {
    const auto qkv = c_attn(x).split(width, -1);
    const at::Tensor y = detail::causal_attention(split_heads(qkv[0], heads), split_heads(qkv[1], heads),
                                                  split_heads(qkv[2], heads), is_training() ? attention_dropout : 0.0);
    return drop(c_proj(merge_heads(y)), dropout_p, is_training());
  }
  at::Tensor step(const at::Tensor& x, const at::Tensor& allowed, detail::LayerCache& cache) {
    const auto qkv = c_attn(x).split(width, -1);
    append(cache, split_heads(qkv[1], heads), split_heads(qkv[2], heads));
    return c_proj(merge_heads(detail::masked_attention(split_heads(qkv[0], heads), cache.k, cache.v, allowed)));
  }
  int64_t heads, width;
  double attention_dropout = 0.0, dropout_p = 0.0;
  AdaptableLinear c_attn{nullptr}, c_proj{nullptr};
};
TORCH_MODULE(Gpt2Attention);

struct Gpt2MlpImpl : nn::Module {
  explicit Gpt2MlpImpl(const HfConfig& c) : activation(c.activation), dropout_p(c.dropout) {
    c_fc = register_module("c_fc", conv1d(c.hidden_size, c.intermediate_size));
    c_proj = register_module("c_proj", conv1d(c.intermediate_size, c.hidden_size));
  }
  at::Tensor forward(const at::Tensor& x) {
    return drop(c_proj(activate(activation, c_fc(x))), dropout_p, is_training());
  }
  std::string activation;
  double dropout_p;
  AdaptableLinear c_fc{nullptr}, c_proj{nullptr};
};
TORCH_MODULE(Gpt2Mlp);

struct Gpt2BlockImpl : nn::Module {
  explicit Gpt2BlockImpl(const HfConfig& c) {
    ln_1 = register_module("ln_1", nn::LayerNorm(nn::LayerNormOptions({c.hidden_size}).eps(c.norm_eps)));
    attn = register_module("attn", Gpt2Attention(c));
    ln_2 = register_module("ln_2", nn::LayerNorm(nn::LayerNormOptions({c.hidden_size}).eps(c.norm_eps)));
    mlp = register_module("mlp", Gpt2Mlp(c));
  }
  at::Tensor forward(at::Tensor x) {
    x = x + attn(ln_1(x));
    return x + mlp(ln_2(x));
  }
  at::Tensor step(at::Tensor x, const at::Tensor& allowed, detail::LayerCache& cache) {
    x = x + attn->step(ln_1(x), allowed, cache);
    return x + mlp(ln_2(x));
  }
  nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  Gpt2Attention attn{nullptr};
  Gpt2Mlp mlp{nullptr};
};
TORCH_MODULE(Gpt2Block);

struct Gpt2TransformerImpl : nn::Module {
  explicit Gpt2TransformerImpl(const HfConfig& c) : embedding_dropout(c.embedding_dropout), context(c.context) {
    wte = register_module("wte", nn::Embedding(c.vocab_size, c.hidden_size));
    wpe = register_module("wpe", nn::Embedding(c.context, c.hidden_size));
    for (int64_t i = 0; i < c.layers; ++i) h->push_back(Gpt2Block(c));
    register_module("h", h);
    ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({c.hidden_size}).eps(c.norm_eps)));
  }
  at::Tensor forward(const at::Tensor& ids) {
    const int64_t t = ids.size(1);
    if (t > context) {
      throw std::invalid_argument("GPT2LMHeadModel: a window of " + std::to_string(t) +
                                  " tokens is longer than its n_positions of " + std::to_string(context));
    }
    at::Tensor x = wte(ids) + wpe(torch::arange(t, ids.options().dtype(torch::kLong)));
    return ln_f(h->forward(drop(x, embedding_dropout, is_training())));
  }
  double embedding_dropout;
  int64_t context;
  nn::Embedding wte{nullptr}, wpe{nullptr};
  Stack h;
  nn::LayerNorm ln_f{nullptr};
};
TORCH_MODULE(Gpt2Transformer);

// Llama's RMSNorm, in float32 whatever the input's type (as Hugging Face's LlamaRMSNorm).
struct RmsNormImpl : nn::Module {
  RmsNormImpl(int64_t width, double eps) : eps(eps) { weight = register_parameter("weight", torch::ones({width})); }
  at::Tensor forward(const at::Tensor& x) {
    const at::Tensor x32 = x.to(at::kFloat);
    const at::Tensor normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return weight * normed.to(x.scalar_type());
  }
  double eps;
  at::Tensor weight;
};
TORCH_MODULE(RmsNorm);

// The rotary embedding's inverse frequencies (Hugging Face's _compute_default_rope_parameters, and
// the linear and llama3 scalings), computed where `options` say.
at::Tensor inverse_frequencies(const HfConfig& c, const at::TensorOptions& options) {
  const at::Tensor exponents = torch::arange(0, c.head_dim, 2, options.dtype(at::kFloat)) / c.head_dim;
  at::Tensor inv = 1.0 / torch::pow(c.rope_theta, exponents);
  if (c.rope_type == "linear") return inv / c.rope_factor;
  if (c.rope_type != "llama3") return inv;
  const double old = static_cast<double>(c.rope_original_context);
  const double low_wavelen = old / c.rope_low_freq_factor, high_wavelen = old / c.rope_high_freq_factor;
  const at::Tensor wavelen = 2 * M_PI / inv;
  at::Tensor scaled = torch::where(wavelen > low_wavelen, inv / c.rope_factor, inv);
  const at::Tensor smooth =
      (old / wavelen - c.rope_low_freq_factor) / (c.rope_high_freq_factor - c.rope_low_freq_factor);
  const at::Tensor smoothed = (1 - smooth) * scaled / c.rope_factor + smooth * scaled;
  const at::Tensor medium = (wavelen >= high_wavelen).logical_and(wavelen <= low_wavelen);
  return torch::where(medium, smoothed, scaled);
}

// A linear layer over generation's few rows a step (the batch's new tokens). For 8 to 48 rows the
// CPU's BLAS computes x·Wᵀ more slowly than (W·xᵀ)ᵀ, which reads the weight the same once
// (bench/README.md: 1.3x to 1.9x for a Llama's MLP and head at 8 rows); elsewhere the usual product.
at::Tensor step_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias = {}) {
  const int64_t rows = x.numel() / x.size(-1);
  if (!x.device().is_cpu() || rows < 8 || rows > 48) return F::linear(x, weight, bias);
  at::Tensor y = torch::matmul(weight, x.reshape({rows, x.size(-1)}).t()).t().contiguous();
  if (bias.defined()) y.add_(bias);
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  return y.view(sizes);
}
at::Tensor step_linear(const nn::Linear& layer, const at::Tensor& x) {
  return step_linear(x, layer->weight, layer->bias);
}
at::Tensor step_linear(AdaptableLinear& layer, const at::Tensor& x) {
  const at::Tensor y = step_linear(x, layer->weight, layer->bias);
  return layer->has_adapter() ? y + layer->delta(x) : y;
}

// x * cos + rotate_half(x) * sin over [N, heads, T, d].
at::Tensor rotate(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const auto halves = x.chunk(2, -1);
  return x * cos + torch::cat({-halves[1], halves[0]}, -1) * sin;
}

struct LlamaAttentionImpl : nn::Module {
  explicit LlamaAttentionImpl(const HfConfig& c) : config(c) {
    const bool qkv = c.attention_bias || c.qkv_bias;
    auto linear = [&](const char* name, int64_t in, int64_t out, bool bias) {
      AdaptableLinearOptions o(in, out);
      o.bias = bias;
      return register_module(name, AdaptableLinear(o));
    };
    q_proj = linear("q_proj", c.hidden_size, c.heads * c.head_dim, qkv);
    k_proj = linear("k_proj", c.hidden_size, c.kv_heads * c.head_dim, qkv);
    v_proj = linear("v_proj", c.hidden_size, c.kv_heads * c.head_dim, qkv);
    o_proj = linear("o_proj", c.heads * c.head_dim, c.hidden_size, c.attention_bias);
  }
  // cos and sin of the positions' angles ([T] -> [T, d]; [N, T] -> [N, 1, T, d]), in float32 then the
  // input's type (as Hugging Face's).
  std::pair<at::Tensor, at::Tensor> angles(const at::Tensor& positions, const at::Tensor& x) {
    if (!frequencies.defined() || frequencies.device() != x.device()) {
      frequencies = inverse_frequencies(config, x.options());  // a constant: made once a device
    }
    at::Tensor a = positions.to(at::kFloat).unsqueeze(-1) * frequencies;
    a = torch::cat({a, a}, -1);
    if (positions.dim() == 2) a = a.unsqueeze(1);
    return {a.cos().to(x.scalar_type()), a.sin().to(x.scalar_type())};
  }
  at::Tensor forward(const at::Tensor& x) {
    const auto [cos, sin] = angles(torch::arange(x.size(1), x.options().dtype(at::kLong)), x);
    const at::Tensor q = rotate(split_heads(q_proj(x), config.heads), cos, sin);
    const at::Tensor k = rotate(split_heads(k_proj(x), config.kv_heads), cos, sin);
    const at::Tensor y = detail::causal_attention(q, k, split_heads(v_proj(x), config.kv_heads),
                                                  is_training() ? config.attention_dropout : 0);
    return o_proj(merge_heads(y));
  }
  // Generation's step; cos and sin of the new tokens' angles (angles()), the same for every layer.
  at::Tensor step(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& allowed,
                  detail::LayerCache& cache) {
    append(cache, rotate(split_heads(step_linear(k_proj, x), config.kv_heads), cos, sin),
           split_heads(step_linear(v_proj, x), config.kv_heads));
    const at::Tensor q = rotate(split_heads(step_linear(q_proj, x), config.heads), cos, sin);
    return step_linear(o_proj, merge_heads(detail::masked_attention(q, cache.k, cache.v, allowed)));
  }
  HfConfig config;
  AdaptableLinear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  at::Tensor frequencies;  // the rotary embedding's inverse frequencies, not a parameter or a buffer (as HF's)
};
TORCH_MODULE(LlamaAttention);

struct LlamaMlpImpl : nn::Module {
  explicit LlamaMlpImpl(const HfConfig& c) : activation(c.activation) {
    auto linear = [&](const char* name, int64_t in, int64_t out) {
      AdaptableLinearOptions o(in, out);
      o.bias = c.mlp_bias;
      return register_module(name, AdaptableLinear(o));
    };
    gate_proj = linear("gate_proj", c.hidden_size, c.intermediate_size);
    up_proj = linear("up_proj", c.hidden_size, c.intermediate_size);
    down_proj = linear("down_proj", c.intermediate_size, c.hidden_size);
  }
  at::Tensor forward(const at::Tensor& x) { return down_proj(activate(activation, gate_proj(x)) * up_proj(x)); }
  at::Tensor step(const at::Tensor& x) {
    return step_linear(down_proj, activate(activation, step_linear(gate_proj, x)) * step_linear(up_proj, x));
  }
  std::string activation;
  AdaptableLinear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(LlamaMlp);

struct LlamaBlockImpl : nn::Module {
  explicit LlamaBlockImpl(const HfConfig& c) {
    input_layernorm = register_module("input_layernorm", RmsNorm(c.hidden_size, c.norm_eps));
    self_attn = register_module("self_attn", LlamaAttention(c));
    post_attention_layernorm = register_module("post_attention_layernorm", RmsNorm(c.hidden_size, c.norm_eps));
    mlp = register_module("mlp", LlamaMlp(c));
  }
  at::Tensor forward(at::Tensor x) {
    x = x + self_attn(input_layernorm(x));
    return x + mlp(post_attention_layernorm(x));
  }
  at::Tensor step(at::Tensor x, const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& allowed,
                  detail::LayerCache& cache) {
    x = x + self_attn->step(input_layernorm(x), cos, sin, allowed, cache);
    return x + mlp->step(post_attention_layernorm(x));
  }
  RmsNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  LlamaAttention self_attn{nullptr};
  LlamaMlp mlp{nullptr};
};
TORCH_MODULE(LlamaBlock);

struct LlamaModelImpl : nn::Module {
  explicit LlamaModelImpl(const HfConfig& c) {
    embed_tokens = register_module("embed_tokens", nn::Embedding(c.vocab_size, c.hidden_size));
    for (int64_t i = 0; i < c.layers; ++i) layers->push_back(LlamaBlock(c));
    register_module("layers", layers);
    norm = register_module("norm", RmsNorm(c.hidden_size, c.norm_eps));
  }
  at::Tensor forward(const at::Tensor& ids) { return norm(layers->forward(embed_tokens(ids))); }
  nn::Embedding embed_tokens{nullptr};
  Stack layers;
  RmsNorm norm{nullptr};
};
TORCH_MODULE(LlamaModel);

// The causal language model: the body ("transformer" for GPT-2, "model" for Llama) and the output
// layer ("lm_head", or the token embedding's weight when tied).
struct CausalLmImpl : nn::Module {
  explicit CausalLmImpl(const HfConfig& c) : nn::Module(c.architecture), config(c) {
    if (c.family == "gpt2") {
      gpt2 = register_module("transformer", Gpt2Transformer(c));
    } else {
      llama = register_module("model", LlamaModel(c));
    }
    if (!c.tie_word_embeddings) {
      lm_head = register_module("lm_head", nn::Linear(nn::LinearOptions(c.hidden_size, c.vocab_size).bias(false)));
    }
    initialize();
  }
  const at::Tensor& embedding() const { return gpt2 ? gpt2->wte->weight : llama->embed_tokens->weight; }
  at::Tensor forward(const at::Tensor& ids) {
    const at::Tensor tokens = ids.scalar_type() == at::kLong ? ids : ids.to(at::kLong);
    const at::Tensor h = gpt2 ? gpt2->forward(tokens) : llama->forward(tokens);
    return head(h);
  }
  at::Tensor head(const at::Tensor& h) { return lm_head ? lm_head(h) : F::linear(h, embedding()); }
  // Generation's step: every block over the new tokens with its cache.
  at::Tensor step(const at::Tensor& ids, const at::Tensor& positions, const at::Tensor& allowed,
                  std::vector<detail::LayerCache>& caches) {
    Stack& blocks = gpt2 ? gpt2->h : llama->layers;
    caches.resize(blocks->size());
    at::Tensor x = gpt2 ? gpt2->wte(ids) + gpt2->wpe(positions) : llama->embed_tokens(ids);
    at::Tensor cos, sin;
    for (std::size_t i = 0; i < blocks->size(); ++i) {
      nn::Module* block = blocks->slot(blocks->slot_names()[i]).ptr().get();
      if (gpt2) {
        x = static_cast<Gpt2BlockImpl*>(block)->step(x, allowed, caches[i]);
      } else {
        auto* llama_block = static_cast<LlamaBlockImpl*>(block);
        if (i == 0) std::tie(cos, sin) = llama_block->self_attn->angles(positions, x);
        x = llama_block->step(x, cos, sin, allowed, caches[i]);
      }
    }
    x = x.narrow(1, x.size(1) - 1, 1);  // the head over the last position only: what generation samples from
    x = gpt2 ? gpt2->ln_f(x) : llama->norm(x);
    return lm_head ? step_linear(lm_head, x) : step_linear(x, embedding());
  }
  // Hugging Face's _init_weights: normal(0, initializer_range) weights and embeddings, zero biases,
  // unit norms.
  void initialize() {
    torch::NoGradGuard no_grad;
    for (auto& p : named_parameters()) {
      const std::string& name = p.key();
      const bool norm = name.find("ln_") != std::string::npos || name.find("layernorm") != std::string::npos ||
                        name.find("norm.") != std::string::npos;
      if (norm && name.size() > 6 && name.compare(name.size() - 6, 6, "weight") == 0) {
        p.value().fill_(1.0);
      } else if (norm || (name.size() > 4 && name.compare(name.size() - 4, 4, "bias") == 0)) {
        p.value().zero_();
      } else {
        p.value().normal_(0.0, config.initializer_range);
      }
    }
  }
  HfConfig config;
  Gpt2Transformer gpt2{nullptr};
  LlamaModel llama{nullptr};
  nn::Linear lm_head{nullptr};
};
TORCH_MODULE(CausalLm);

// ---- weights ----

// The safetensors files of a folder: model.safetensors, or the shards its index names.
std::vector<std::string> weight_files(const fs::path& folder) {
  const fs::path single = folder / "model.safetensors", index = folder / "model.safetensors.index.json";
  if (fs::exists(index)) {
    json parsed;
    try {
      parsed = json::parse(read_file(index.string(), {.what = "the weights' index", .max_bytes = 64 << 20}));
    } catch (const json::exception& e) {
      throw std::runtime_error(index.string() + ": not JSON (" + std::string(e.what()) + ")");
    }
    if (!parsed.contains("weight_map") || !parsed["weight_map"].is_object())
      throw std::runtime_error(index.string() + ": no \"weight_map\" object");
    std::set<std::string> files;
    for (const auto& [name, file] : parsed["weight_map"].items()) {
      if (!file.is_string() || !is_plain_name(file.get<std::string>()))
        throw std::runtime_error(index.string() + ": weight_map: '" + name + "': not a file name in the folder");
      files.insert(file.get<std::string>());
    }
    std::vector<std::string> out;
    out.reserve(files.size());
    for (const auto& f : files) out.push_back((folder / f).string());
    return out;
  }
  if (fs::exists(single)) return {single.string()};
  const bool pickle = fs::exists(folder / "pytorch_model.bin");
  throw std::runtime_error(folder.string() + ": no model.safetensors or model.safetensors.index.json" +
                           (pickle ? std::string(" (pytorch_model.bin is a pickle baton does not read: save it with "
                                                 "save_pretrained(safe_serialization=True))")
                                   : std::string(" (a recipe's model.pretrained: false trains config.json's "
                                                 "architecture from its initial weights)")));
}

// Tensors a file may hold that the model does not: buffers older transformers saved, a tied head.
bool ignorable(const std::string& name, const HfConfig& c) {
  auto ends = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends(".attn.bias") || ends(".attn.masked_bias") || ends("rotary_emb.inv_freq") ||
         (c.tie_word_embeddings && name == "lm_head.weight");
}

std::string folder_of(const std::string& path) {
  return fs::is_directory(path) ? path : fs::path(path).parent_path().string();
}

}  // namespace

HfConfig read_hf_config(const std::string& folder) {
  std::error_code ec;
  if (!fs::exists(folder, ec)) {
    throw std::invalid_argument(folder + ": no such folder (a Hugging Face model is the folder save_pretrained wrote)" +
                                where_relative(folder));
  }
  const std::string file = fs::is_directory(folder) ? (fs::path(folder) / "config.json").string() : folder;
  if (!fs::exists(file, ec) && fs::exists(fs::path(folder) / "adapter_config.json", ec)) {
    throw std::invalid_argument(folder +
                                ": a PEFT adapter, not a model: load its base with the adapter (a recipe's "
                                "algorithms: {lora: {init: {from: " +
                                folder + "}}}), or merge it into one (baton export --format hf --merge-lora)");
  }
  return parse_hf_config(read_file(file, {.what = "the model's config", .max_bytes = 16 << 20}), file);
}

HfConfig parse_hf_config(const std::string& text, const std::string& file) {
  json parsed;
  try {
    parsed = json::parse(text);
  } catch (const json::exception& e) {
    throw std::invalid_argument(file + ": not JSON (" + std::string(e.what()) + ")");
  }
  if (!parsed.is_object()) throw std::invalid_argument(file + ": not a JSON object");
  const ConfigReader r(file, parsed);
  HfConfig c;
  if (r.has("architectures")) {
    const json& a = r.at("architectures");
    if (!a.is_array() || a.empty() || !a.front().is_string()) r.fail("architectures", "expected a list of names");
    c.architecture = a.front().get<std::string>();
  } else {
    const std::string type = r.text("model_type", "");
    for (const auto& [name, kind] : architectures()) {
      if (kind == type) c.architecture = name;
    }
    if (c.architecture.empty())
      r.fail("architectures", "missing, and model_type '" + type + "' names none baton builds");
  }
  const auto known = architectures().find(c.architecture);
  if (known == architectures().end()) {
    std::string names;
    for (const auto& [name, kind] : architectures()) names += (names.empty() ? "" : ", ") + name;
    r.fail("architectures", "'" + c.architecture + "' is not implemented (baton builds " + names + ")");
  }
  if (known->second == "gpt2") {
    read_gpt2(r, c);
  } else {
    read_llama(r, c, known->second);
  }
  check_activation(file, c.family == "gpt2" ? "activation_function" : "hidden_act", c.activation);
  c.initializer_range = r.number("initializer_range", 0.02);
  c.bos_token_id = r.token("bos_token_id");
  c.eos_token_id = r.token("eos_token_id");
  c.json = text;
  return c;
}

std::shared_ptr<Model> make_hf_model(const HfConfig& config) {
#if TORCH_VERSION_MAJOR < 2
  static std::once_flag said;  // on stderr: stdout may be JSON (baton generate --json)
  std::call_once(said, [&] {
    std::fprintf(stderr,
                 "baton: %s on LibTorch %s: no fused attention or bf16 kernels, so it trains and generates several "
                 "times slower than against LibTorch 2.x (make build builds against python3's PyTorch 2.x when it "
                 "has one: pip install torch; docs/building.md)\n",
                 config.architecture.c_str(), TORCH_VERSION);
  });
#endif
  return std::make_shared<Classifier>(CausalLm(config).ptr());
}

void load_hf_weights(Model& model, const std::string& folder) {
  const auto* lm = dynamic_cast<CausalLmImpl*>(dynamic_cast<Classifier&>(model).module().ptr().get());
  if (lm == nullptr) throw std::invalid_argument("load_hf_weights: the model is not one make_hf_model made");
  std::map<std::string, at::Tensor> wanted;
  for (auto& [name, tensor] : model_tensors(model)) wanted[name] = tensor;
  std::set<std::string> loaded;
  const std::vector<std::string> files = weight_files(folder_of(folder));
  torch::NoGradGuard no_grad;
  for (const auto& file : files) {
    for (const auto& [name, tensor] : read_safetensors(file)) {
      const auto it = wanted.find(name);
      if (it == wanted.end()) {
        if (ignorable(name, lm->config)) continue;
        throw std::runtime_error(std::string(file)
                                     .append(": '")
                                     .append(name)
                                     .append("' is not a tensor of ")
                                     .append(lm->config.architecture)
                                     .append(" as config.json describes it"));
      }
      if (tensor.sizes() != it->second.sizes()) {
        throw std::runtime_error(std::string(file)
                                     .append(": '")
                                     .append(name)
                                     .append("' has shape ")
                                     .append(c10::str(tensor.sizes()))
                                     .append(", the model's is ")
                                     .append(c10::str(it->second.sizes())));
      }
      it->second.copy_(tensor);
      loaded.insert(name);
    }
  }
  for (const auto& [name, tensor] : wanted) {
    if (!loaded.count(name)) {
      throw std::runtime_error(files.front() + ": '" + name + "' is missing" +
                               (files.size() > 1 ? " (from every shard the index names)" : ""));
    }
  }
}

std::shared_ptr<Model> load_hf_model(const std::string& folder) {
  auto model = make_hf_model(read_hf_config(folder));
  load_hf_weights(*model, folder);
  return model;
}

namespace detail {

at::Tensor hf_step(Model& model, const at::Tensor& ids, const at::Tensor& positions, const at::Tensor& allowed,
                   std::vector<LayerCache>& caches) {
  auto* lm = dynamic_cast<CausalLmImpl*>(dynamic_cast<Classifier&>(model).module().ptr().get());
  if (lm == nullptr) throw std::invalid_argument("generation: the model is not a Hugging Face one (model.name: hf)");
  return lm->step(ids, positions, allowed, caches);
}

}  // namespace detail

const HfConfig* hf_config_of(const Model& model) {
  const auto* classifier = dynamic_cast<const Classifier*>(&model);
  if (classifier == nullptr) return nullptr;
  const auto* lm = dynamic_cast<const CausalLmImpl*>(const_cast<Classifier*>(classifier)->module().ptr().get());
  return lm == nullptr ? nullptr : &lm->config;
}

std::size_t save_hf_model(const Model& model, const std::string& folder, const std::string& source) {
  const HfConfig* config = hf_config_of(model);
  if (config == nullptr)
    throw std::invalid_argument("--format hf: the model is not a Hugging Face one (model.name hf)");
  for (auto& [name, layer] : adaptable_layers(const_cast<Model&>(model))) {
    if (layer->has_adapter()) {
      throw std::invalid_argument("--format hf: the model carries LoRA adapters ('" + name +
                                  "'): --merge-lora folds them into its weights, --format peft writes them alone");
    }
  }
  const json parsed = json::parse(config->json);
  const std::string dtype = parsed.value("dtype", parsed.value("torch_dtype", std::string("float32")));
  const at::ScalarType type = dtype == "bfloat16" ? at::kBFloat16 : dtype == "float16" ? at::kHalf : at::kFloat;
  NamedTensors tensors;
  for (const auto& [name, tensor] : model_tensors(model)) tensors.emplace_back(name, tensor.detach().to(type));
  write_file_atomically((fs::path(folder) / "config.json").string(), config->json);
  write_safetensors((fs::path(folder) / "model.safetensors").string(), tensors, {{"format", "pt"}});
  std::error_code ec;
  for (const char* name : {"generation_config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model",
                           "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt"}) {
    const fs::path from = fs::path(source) / name;
    if (!source.empty() && fs::is_regular_file(from, ec)) {
      write_file_atomically((fs::path(folder) / name).string(),
                            read_file(from.string(), {.what = "a tokenizer's file", .max_bytes = 1ull << 30}));
    }
  }
  return tensors.size();
}

}  // namespace baton
