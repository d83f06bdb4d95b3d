// LoRA's layer (src/models/lora.cpp): an adapter starts as no change, trains only A and B, folds
// into the weight exactly, and goes out and back in as a PEFT adapter folder.
#include "baton/models/lora.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/io/file.h"
#include "baton/models/hf.h"
#include "baton/models/safetensors.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

AdaptableLinear layer(bool transposed, bool bias = true) {
  AdaptableLinearOptions o(6, 4);
  o.transposed = transposed;
  o.bias = bias;
  return AdaptableLinear(o);
}

TEST(Lora, AnAdapterStartsAsNoChangeAndOnlyItTrains) {
  torch::manual_seed(0);
  for (const bool transposed : {false, true}) {
    AdaptableLinear l = layer(transposed);
    const at::Tensor x = torch::randn({3, 5, 6});
    const at::Tensor before = l(x).detach();
    l->add_adapter({.r = 2, .alpha = 4});
    EXPECT_TRUE(torch::equal(l(x), before));  // B is zeros
    EXPECT_EQ(l->lora_A->weight.sizes(), (std::vector<int64_t>{2, 6}));
    EXPECT_EQ(l->lora_B->weight.sizes(), (std::vector<int64_t>{4, 2}));
    EXPECT_FALSE(l->weight.requires_grad());
    EXPECT_FALSE(l->bias.requires_grad());
    l(x).sum().backward();
    EXPECT_TRUE(l->lora_B->weight.grad().defined());
    EXPECT_FALSE(l->weight.grad().defined());
    EXPECT_THAT(error_of([&] { l->add_adapter({.r = 2}); }), HasSubstr("already has an adapter"));
  }
  EXPECT_THAT(error_of([] { layer(false)->add_adapter({.r = 0}); }), HasSubstr("r is 0; it must be 1 or more"));
}

TEST(Lora, ScalingIsAlphaOverROrOverItsRootRankStabilised) {
  EXPECT_DOUBLE_EQ((LoraSpec{.r = 16, .alpha = 32}).scaling(), 2.0);
  EXPECT_DOUBLE_EQ((LoraSpec{.r = 16, .alpha = 32, .rslora = true}).scaling(), 8.0);
}

TEST(Lora, AMergedAdapterGivesTheSameOutputsWithoutOne) {
  torch::manual_seed(1);
  for (const bool transposed : {false, true}) {
    AdaptableLinear l = layer(transposed, /*bias=*/!transposed);
    l->add_adapter({.r = 3, .alpha = 6, .dropout = 0.5});
    {
      torch::NoGradGuard no_grad;
      l->lora_B->weight.normal_();
    }
    l->eval();  // no dropout at evaluation
    const at::Tensor x = torch::randn({7, 6});
    const at::Tensor adapted = l(x).detach();
    EXPECT_GT((adapted - l->base(x)).abs().max().item<double>(), 0.1);
    l->merge_adapter();
    EXPECT_FALSE(l->has_adapter());
    EXPECT_EQ(l->named_parameters().size(), transposed ? 1u : 2u);
    EXPECT_TRUE(torch::allclose(l(x), adapted, 1e-5, 1e-5));
  }
}

std::shared_ptr<Model> small_llama() {
  const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                                 {"vocab_size", 40},
                                 {"hidden_size", 16},
                                 {"intermediate_size", 24},
                                 {"num_hidden_layers", 2},
                                 {"num_attention_heads", 4},
                                 {"num_key_value_heads", 2},
                                 {"max_position_embeddings", 32}};
  return make_hf_model(parse_hf_config(config.dump(), "config.json"));
}

TEST(Lora, TheLayersAreNamedAsHuggingFacesAndAnAdapterFolderGoesOutAndBackIn) {
  torch::manual_seed(2);
  auto model = small_llama();
  auto layers = adaptable_layers(*model);
  ASSERT_EQ(layers.size(), 14u);  // 2 blocks of q, k, v, o, gate, up, down
  EXPECT_EQ(layers.front().first, "model.layers.0.self_attn.q_proj");
  for (auto& [name, l] : layers) {
    if (name.ends_with("q_proj") || name.ends_with("v_proj")) l->add_adapter({.r = 2, .alpha = 8, .rslora = true});
    if (l->has_adapter()) {
      torch::NoGradGuard no_grad;
      l->lora_B->weight.normal_();
    }
  }
  const baton::testing::TempDir dir("lora_peft");
  const std::string folder = (dir.path() / "adapter").string();
  std::filesystem::create_directories(folder);
  EXPECT_EQ(save_peft_adapter(*model, folder, "models/base"), 8u);
  const auto config = nlohmann::json::parse(read_file(folder + "/adapter_config.json"));
  EXPECT_EQ(config["r"], 2);
  EXPECT_EQ(config["lora_alpha"], 8.0);
  EXPECT_EQ(config["use_rslora"], true);
  EXPECT_EQ(config["target_modules"], (nlohmann::json{"q_proj", "v_proj"}));
  EXPECT_EQ(config["base_model_name_or_path"], "models/base");
  const NamedTensors file = read_safetensors(folder + "/adapter_model.safetensors");
  EXPECT_EQ(file.front().first, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");

  const PeftAdapter back = read_peft_adapter(folder);
  EXPECT_EQ(back.spec.r, 2);
  EXPECT_TRUE(back.spec.rslora);
  ASSERT_EQ(back.layers.size(), 4u);
  const auto& v = back.layers.at("model.layers.1.self_attn.v_proj");
  EXPECT_TRUE(torch::equal(v.second, layers[9].second->lora_B->weight));

  EXPECT_EQ(merge_adapters(*model), 4);
  EXPECT_THAT(error_of([&] { save_peft_adapter(*model, folder, ""); }), HasSubstr("carries no LoRA adapters"));
}

TEST(Lora, AnAdapterBatonCannotApplyIsRefusedByFileAndKey) {
  const baton::testing::TempDir dir("lora_bad");
  const std::string folder = dir.path().string();
  EXPECT_THAT(error_of([&] { read_peft_adapter(folder + "/none"); }), HasSubstr("not a folder"));
  baton::testing::write_file(folder + "/adapter_config.json", R"({"peft_type": "LORA", "r": 4, "use_dora": true})");
  EXPECT_THAT(error_of([&] { read_peft_adapter(folder); }),
              HasSubstr("adapter_config.json: use_dora: DoRA adapters are not implemented"));
  baton::testing::write_file(folder + "/adapter_config.json", R"({"peft_type": "IA3"})");
  EXPECT_THAT(error_of([&] { read_peft_adapter(folder); }), HasSubstr("peft_type: 'IA3'"));
  for (const auto& [config, error] : std::vector<std::pair<std::string, std::string>>{
           {R"({"r": 1e30})", "r: 1e+30: must be a whole number from 1 to 65536"},
           {R"({"r": 2.5})", "r: 2.5: must be a whole number from 1 to 65536"},
           {R"({"r": 0})", "r: 0.0: must be a whole number"},
           {R"({"r": "8"})", "r: expected a number"},
           {R"({"r": 8, "lora_alpha": -1})", "lora_alpha: -1.0: must be a positive number"},
           {R"({"r": 8, "lora_dropout": 1.5})", "lora_dropout: 1.5: must be from 0 to below 1"}}) {
    baton::testing::write_file(folder + "/adapter_config.json", config);
    EXPECT_THAT(error_of([&] { read_peft_adapter(folder); }), HasSubstr("adapter_config.json: " + error)) << config;
  }
  baton::testing::write_file(folder + "/adapter_config.json", R"({"r": 2})");
  write_safetensors(folder + "/adapter_model.safetensors",
                    {{"base_model.model.x.lora_A.weight", torch::zeros({2, 3})}});
  EXPECT_THAT(error_of([&] { read_peft_adapter(folder); }), HasSubstr("layer 'x' has only its lora_A tensor"));
}

}  // namespace
}  // namespace baton
