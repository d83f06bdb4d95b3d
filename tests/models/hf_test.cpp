// Hugging Face models (src/models/hf.cpp) without Hugging Face: configs of both generations of
// transformers read, what baton does not build refused by file and key, the parameters named as
// Hugging Face names them, weights written and read back, missing or misshapen tensors named, and
// the logits causal. tests/llm/ compares the logits with transformers' own.
#include "baton/models/hf.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/models/safetensors.h"
#include "common/test_util.h"

namespace baton {
namespace {

using json = nlohmann::json;
using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;

json llama_config() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", 50},
          {"hidden_size", 32},
          {"intermediate_size", 48},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"max_position_embeddings", 64},
          {"rms_norm_eps", 1e-6},
          {"hidden_act", "silu"},
          {"tie_word_embeddings", false},
          {"rope_theta", 500000.0},
          {"rope_scaling",
           {{"rope_type", "llama3"},
            {"factor", 8.0},
            {"low_freq_factor", 1.0},
            {"high_freq_factor", 4.0},
            {"original_max_position_embeddings", 16}}},
          {"bos_token_id", 1},
          {"eos_token_id", {2, 3}}};
}

json gpt2_config() {
  return {{"architectures", {"GPT2LMHeadModel"}},
          {"model_type", "gpt2"},
          {"vocab_size", 50},
          {"n_embd", 32},
          {"n_layer", 2},
          {"n_head", 4},
          {"n_positions", 16},
          {"activation_function", "gelu_new"}};
}

std::string write_config(const TempDir& dir, const json& config) {
  std::ofstream(dir.file("config.json")) << config.dump(2);
  return dir.str();
}

TEST(HfConfig, ReadsLlamaOfTransformers4AndGpt2) {
  TempDir dir("hf");
  HfConfig c = read_hf_config(write_config(dir, llama_config()));
  EXPECT_EQ(c.family, "llama");
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.rope_type, "llama3");
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_original_context, 16);
  EXPECT_EQ(c.eos_token_id, 2);
  EXPECT_FALSE(c.tie_word_embeddings);
  c = read_hf_config(write_config(dir, gpt2_config()));
  EXPECT_EQ(c.family, "gpt2");
  EXPECT_EQ(c.intermediate_size, 128) << "n_inner: 4 n_embd when absent";
  EXPECT_TRUE(c.tie_word_embeddings) << "GPT-2 ties by default";
  json v5 = llama_config();  // transformers 5: rope_parameters
  v5.erase("rope_scaling");
  v5.erase("rope_theta");
  v5["rope_parameters"] = {{"rope_type", "linear"}, {"rope_theta", 1234.0}, {"factor", 2.0}};
  c = read_hf_config(write_config(dir, v5));
  EXPECT_EQ(c.rope_type, "linear");
  EXPECT_EQ(c.rope_theta, 1234.0);
  EXPECT_EQ(c.rope_factor, 2.0);
}

TEST(HfConfig, WhatBatonDoesNotBuildIsRefusedByFileAndKey) {
  TempDir dir("hf");
  const std::string file = dir.file("config.json");
  const auto refused = [&](json config) { return error_of([&] { read_hf_config(write_config(dir, config)); }); };
  json c = llama_config();
  c["architectures"] = {"T5ForConditionalGeneration"};
  EXPECT_THAT(refused(c), HasSubstr(file + ": architectures: 'T5ForConditionalGeneration' is not implemented "
                                           "(baton builds GPT2LMHeadModel, LlamaForCausalLM"));
  c = llama_config();
  c["rope_scaling"]["rope_type"] = "yarn";
  EXPECT_THAT(refused(c), HasSubstr("rope_scaling.rope_type: 'yarn' is not implemented"));
  c = llama_config();
  c.erase("hidden_size");
  EXPECT_THAT(refused(c), HasSubstr(file + ": hidden_size: missing"));
  c = llama_config();
  c["num_key_value_heads"] = 3;
  EXPECT_THAT(refused(c), HasSubstr("num_key_value_heads: must divide num_attention_heads"));
  c = llama_config();
  c["architectures"] = {"MistralForCausalLM"};
  c["sliding_window"] = 8;
  EXPECT_THAT(refused(c), HasSubstr("sliding_window: a sliding window shorter than max_position_embeddings"));
  c["sliding_window"] = nullptr;
  EXPECT_EQ(refused(c), "no error");
  c["layer_types"] = {"full_attention", "sliding_attention"};
  EXPECT_THAT(refused(c), HasSubstr("layer_types: \"sliding_attention\" is not implemented"));
  c = llama_config();
  c["hidden_act"] = "gelu_10";
  EXPECT_THAT(refused(c), HasSubstr("hidden_act: 'gelu_10' is not implemented"));
  c = gpt2_config();
  c["scale_attn_by_inverse_layer_idx"] = true;
  EXPECT_THAT(refused(c), HasSubstr("scale_attn_by_inverse_layer_idx: true is not implemented"));
  std::ofstream(file) << "{\"architectures\": [";
  EXPECT_THAT(error_of([&] { read_hf_config(dir.str()); }), HasSubstr(file + ": not JSON"));
}

TEST(HfConfig, APeftAdapterFolderIsNamedAsOneWithWhatToDo) {
  TempDir dir("hf_adapter");
  std::ofstream(dir.file("adapter_config.json")) << R"({"peft_type": "LORA", "r": 8})";
  EXPECT_THAT(error_of([&] { read_hf_config(dir.str()); }),
              HasSubstr(dir.str() + ": a PEFT adapter, not a model: load its base with the adapter"));
}

TEST(HfModel, ParametersCarryHuggingFacesNames) {
  TempDir dir("hf");
  const auto names_of = [](const Model& model) {
    std::vector<std::string> names;
    for (const auto& [name, tensor] : model_tensors(model)) names.push_back(name);
    return names;
  };
  const auto llama = names_of(*make_hf_model(read_hf_config(write_config(dir, llama_config()))));
  for (const char* name :
       {"model.embed_tokens.weight", "model.layers.1.self_attn.k_proj.weight", "model.layers.0.mlp.gate_proj.weight",
        "model.layers.0.post_attention_layernorm.weight", "model.norm.weight", "lm_head.weight"}) {
    EXPECT_THAT(llama, ::testing::Contains(std::string(name)));
  }
  EXPECT_EQ(llama.size(), 1U + 2 * 9 + 1 + 1);
  const auto gpt2 = names_of(*make_hf_model(read_hf_config(write_config(dir, gpt2_config()))));
  for (const char* name : {"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.1.attn.c_attn.weight",
                           "transformer.h.0.mlp.c_proj.bias", "transformer.ln_f.weight"}) {
    EXPECT_THAT(gpt2, ::testing::Contains(std::string(name)));
  }
  EXPECT_THAT(gpt2, ::testing::Not(::testing::Contains(std::string("lm_head.weight")))) << "tied";
}

// Written as safetensors (bfloat16 too) and loaded into a new model: the same logits; what is
// missing, misshapen or extra is named with its file.
TEST(HfModel, WeightsLoadFromSafetensorsAndWhatIsWrongIsNamed) {
  TempDir dir("hf");
  const HfConfig config = read_hf_config(write_config(dir, llama_config()));
  torch::manual_seed(0);
  const auto saved = make_hf_model(config);
  write_safetensors(dir.file("model.safetensors"), model_tensors(*saved));
  const auto loaded = load_hf_model(dir.str());
  saved->eval();
  loaded->eval();
  const at::Tensor ids = torch::randint(0, 50, {2, 10});
  const at::Tensor logits = saved->forward(Batch{ids, {}});
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, 10, 50}));
  EXPECT_TRUE(torch::equal(logits, loaded->forward(Batch{ids, {}})));

  NamedTensors half;  // bfloat16 weights load, converted
  for (const auto& [name, t] : model_tensors(*saved)) half.emplace_back(name, t.to(at::kBFloat16));
  write_safetensors(dir.file("model.safetensors"), half);
  EXPECT_LT((load_hf_model(dir.str())->forward(Batch{ids, {}}) - logits).abs().max().item<double>(), 0.1);

  const std::string file = dir.file("model.safetensors");
  NamedTensors tensors = model_tensors(*saved);
  tensors.erase(tensors.begin());  // model.embed_tokens.weight
  write_safetensors(file, tensors);
  EXPECT_THAT(error_of([&] { load_hf_model(dir.str()); }),
              HasSubstr(file + ": 'model.embed_tokens.weight' is missing"));
  tensors = model_tensors(*saved);
  tensors[0].second = torch::zeros({51, 32});
  write_safetensors(file, tensors);
  EXPECT_THAT(error_of([&] { load_hf_model(dir.str()); }),
              HasSubstr(file + ": 'model.embed_tokens.weight' has shape [51, 32], the model's is [50, 32]"));
  tensors = model_tensors(*saved);
  tensors.emplace_back("model.layers.2.mlp.up_proj.weight", torch::zeros({2}));
  write_safetensors(file, tensors);
  EXPECT_THAT(error_of([&] { load_hf_model(dir.str()); }),
              HasSubstr(file + ": 'model.layers.2.mlp.up_proj.weight' is not a tensor of LlamaForCausalLM"));
  std::filesystem::remove(file);
  EXPECT_THAT(error_of([&] { load_hf_model(dir.str()); }), HasSubstr("no model.safetensors"));
}

// A token's logits depend on it and the tokens before it only; GPT-2's window is its n_positions.
TEST(HfModel, LogitsAreCausal) {
  TempDir dir("hf");
  for (const json& config : {llama_config(), gpt2_config()}) {
    torch::manual_seed(0);
    const auto model = make_hf_model(read_hf_config(write_config(dir, config)));
    model->eval();
    const at::Tensor ids = torch::randint(0, 50, {1, 12});
    at::Tensor changed = ids.clone();
    changed[0][8] = (ids[0][8].item<int64_t>() + 1) % 50;
    const at::Tensor a = model->forward(Batch{ids, {}}), b = model->forward(Batch{changed, {}});
    EXPECT_TRUE(torch::allclose(a.narrow(1, 0, 8), b.narrow(1, 0, 8), 1e-6, 1e-6));
    EXPECT_FALSE(torch::allclose(a.narrow(1, 8, 4), b.narrow(1, 8, 4), 1e-6, 1e-6));
  }
  const auto gpt2 = make_hf_model(read_hf_config(write_config(dir, gpt2_config())));
  EXPECT_THAT(error_of([&] {
                gpt2->forward(Batch{torch::zeros({1, 17}, torch::kLong), {}});
              }),
              HasSubstr("a window of 17 tokens is longer than its n_positions of 16"));
}

}  // namespace
}  // namespace baton
