// Hugging Face causal language models: the folder `save_pretrained` writes (config.json, then
// model.safetensors or shards named by model.safetensors.index.json) read into a baton Model whose
// parameters carry Hugging Face's names, so a safetensors file maps one to one.
//
//   auto model = baton::load_hf_model("models/my-llama");     // the architecture and the weights
//   at::Tensor logits = model->forward(baton::Batch{ids, {}});  // ids [N, T] int64 -> [N, T, vocab]
//
// Architectures: GPT2LMHeadModel, and LlamaForCausalLM with the configs that are Llama's under other
// names where they match it exactly (MistralForCausalLM without a sliding window, Qwen2ForCausalLM).
// docs/models.md lists the config keys read and the values refused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "baton/models/model.h"

namespace baton {

// What baton reads of a config.json.
struct HfConfig {
  std::string architecture;  // "GPT2LMHeadModel", "LlamaForCausalLM", ...
  std::string family;        // "gpt2" or "llama": the layout baton builds
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;  // grouped-query attention: fewer key/value heads (== heads: none)
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t context = 0;  // max_position_embeddings (GPT-2: n_positions)
  double norm_eps = 1e-5;
  std::string activation;  // "gelu_new", "gelu", "relu", "silu"
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q, k, v and o projections with biases (Llama's attention_bias)
  bool qkv_bias = false;        // q, k and v only (Qwen2)
  bool mlp_bias = false;
  double dropout = 0.0;  // GPT-2's resid_pdrop (embeddings' and attention's: their own keys)
  double embedding_dropout = 0.0;
  double attention_dropout = 0.0;
  double initializer_range = 0.02;
  // Rotary embeddings (Llama): theta, and the scaling ("default", "linear", "llama3").
  double rope_theta = 10000.0;
  std::string rope_type = "default";
  double rope_factor = 1.0;
  double rope_low_freq_factor = 1.0;
  double rope_high_freq_factor = 4.0;
  int64_t rope_original_context = 0;
  int64_t bos_token_id = -1;  // -1: none
  int64_t eos_token_id = -1;
  std::string json;  // config.json's text as read: what an export writes back
};

// config.json of `folder` (or the file itself). Throws std::invalid_argument naming the file and the
// key: an architecture baton does not build (naming those it does), a key missing or of the wrong
// type, a value baton does not implement (a sliding window, a rope_scaling kind, ...).
HfConfig read_hf_config(const std::string& folder);
// The same from config.json's text (`file` names it in messages).
HfConfig parse_hf_config(const std::string& text, const std::string& file);

// A model of the config's architecture with random weights (Hugging Face's initialisation: normal
// with initializer_range, zero biases, unit norms). Its forward takes token ids [N, T] (int64) and
// gives logits [N, T, vocab_size]; it trains with cross-entropy against next tokens [N, T].
std::shared_ptr<Model> make_hf_model(const HfConfig& config);

// The folder's weights into `model` (made from its config): model.safetensors, or the shards that
// model.safetensors.index.json names; float32, bfloat16 and float16 tensors, converted to the
// model's dtype. Throws std::runtime_error naming the file and the tensor: missing, shaped otherwise,
// or one the model does not have.
void load_hf_weights(Model& model, const std::string& folder);

// read_hf_config + make_hf_model + load_hf_weights.
std::shared_ptr<Model> load_hf_model(const std::string& folder);

// The config of a model make_hf_model made; nullptr for any other model.
const HfConfig* hf_config_of(const Model& model);

// Writes what from_pretrained loads, with no missing or unexpected keys, into the (existing, empty)
// folder: config.json as read, model.safetensors (the model's tensors by Hugging Face's names, a
// tied head left out, in the config's dtype), and from `source` (the folder the model came from,
// when there) generation_config.json and the tokenizer's files. Returns the tensors written.
// Throws std::invalid_argument for a model make_hf_model did not make.
std::size_t save_hf_model(const Model& model, const std::string& folder, const std::string& source = "");

}  // namespace baton
