// The lora algorithm (src/algorithms/lora.cpp) on a small Llama from a folder: only the adapters
// train, the checkpoint holds them and not the frozen base, a run stopped and resumed from it ends
// as one that never stopped, and what is wrong in the options is named. tests/llm/lora_peft.py
// compares the training with PEFT's.
#include "baton/algorithms/lora.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/algorithms/registry.h"
#include "baton/data/tokens.h"
#include "baton/models/hf.h"
#include "baton/models/lora.h"
#include "baton/models/safetensors.h"
#include "baton/train/checkpoint.h"
#include "baton/train/recipe.h"
#include "baton/train/recipe_file.h"
#include "baton/train/trainer.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

struct LoraRun {
  testing::TempDir dir{"lora_run"};
  LoraRun() {
    std::vector<uint16_t> tokens(4000);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>((i * 7) % 23);
    write_token_shard((dir.path() / "train_000.bin").string(), tokens);
    fs::create_directories(dir.path() / "llama");
    std::ofstream(dir.path() / "llama" / "config.json")
        << R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 23, "hidden_size": 32, "intermediate_size": 48,)"
        << R"( "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64})";
    torch::manual_seed(0);
    write_safetensors((dir.path() / "llama" / "model.safetensors").string(),
                      model_tensors(*make_hf_model(read_hf_config((dir.path() / "llama").string()))));
  }
  std::string recipe(const std::string& lora, const std::string& more = "", const std::string& model = "") const {
    return "data: {dataset: tokens, train_files: " + (dir.path() / "train_*.bin").string() +
           ", context: 16, batch_size: 4}\nmodel: {name: hf, path: " + (dir.path() / "llama").string() + model +
           "}\noptimizer: {name: adamw, lr: 0.01}\nprogress_bar: false\nseed: 3\nalgorithms: {lora: " + lora +
           "}\nmax_duration: 12ba\n" + more;
  }
  TrainingRun build(const std::string& yaml) const { return build_run(Recipe::parse(yaml, "r.yaml")); }
};

std::map<std::string, at::Tensor> tensors_of(torch::nn::Module& m) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : m.named_parameters()) out[p.key()] = p.value().detach().clone();
  return out;
}

TEST(LoraAlgorithm, OnlyTheAdaptersTrainAndOnlyTheyAreCheckpointed) {
  LoraRun run;
  TrainingRun r =
      run.build(run.recipe("{r: 4, alpha: 8, targets: [q_proj, v_proj]}",
                           "save_folder: " + (run.dir.path() / "ckpt").string() + "\nsave_interval: 12ba\n"));
  Trainer trainer(r.options.console_log_interval("0ep"));
  const auto before = tensors_of(*trainer.state().model);
  trainer.fit();
  const auto after = tensors_of(*trainer.state().model);
  int adapters = 0;
  for (const auto& [name, t] : after) {
    const bool lora = name.find(".lora_") != std::string::npos;
    adapters += lora;
    if (!lora) {
      EXPECT_TRUE(torch::equal(t, before.at(name))) << name << " is frozen";
    }
    if (name.find("lora_B") != std::string::npos) {
      EXPECT_GT(t.abs().max().item<double>(), 0) << name << " trained";
    }
  }
  EXPECT_EQ(adapters, 8);  // A and B of q and v in 2 layers
  const auto* lora = dynamic_cast<const Lora*>(r.options.algorithms().front().get());
  ASSERT_NE(lora, nullptr);
  EXPECT_EQ(lora->adapted_layers(), 4);
  EXPECT_EQ(lora->trainable_params(), 2 * (4 * 32 + 32 * 4) + 2 * (4 * 32 + 16 * 4));
  EXPECT_LT(lora->trainable_params() * 10, lora->total_params());

  const CheckpointFile ckpt = read_checkpoint((run.dir.path() / "ckpt" / "latest").string());
  int model_tensors_saved = 0;
  for (const auto& [name, t] : ckpt.state.tensors) {
    if (name.rfind("model/", 0) != 0) continue;
    ++model_tensors_saved;
    EXPECT_NE(name.find(".lora_"), std::string::npos) << name << ": the frozen base is not saved";
  }
  EXPECT_EQ(model_tensors_saved, 8);
}

TEST(LoraAlgorithm, AResumedRunEndsAsOneThatNeverStopped) {
  LoraRun run;
  const std::string ckpt = (run.dir.path() / "ckpt").string();
  const std::string lora = "{r: 2, alpha: 4, dropout: 0.1, targets: [attention]}";
  TrainingRun whole = run.build(run.recipe(lora));
  Trainer a(whole.options.console_log_interval("0ep"));
  a.fit();
  TrainingRun first = run.build(run.recipe(lora, "save_folder: " + ckpt + "\nsave_interval: 5ba\n"));
  Trainer b(first.options.console_log_interval("0ep").max_duration(Time::parse("5ba")));
  b.fit();
  TrainingRun second = run.build(run.recipe(lora, "load_path: " + ckpt + "/latest\n"));
  Trainer c(second.options.console_log_interval("0ep"));
  c.fit();
  EXPECT_EQ(c.state().timestamp.batch(), 12);
  const auto x = tensors_of(*a.state().model), y = tensors_of(*c.state().model);
  ASSERT_EQ(x.size(), y.size());
  for (const auto& [name, t] : x) EXPECT_TRUE(torch::equal(t, y.at(name))) << name;
}

// The checkpoint names its frozen base (the SHA-256 of its weights and of its config.json): resuming
// onto a base folder whose weights or config have changed since is refused, naming which.
TEST(LoraAlgorithm, ACheckpointLoadsOnlyOntoTheBaseItWasTrainedOn) {
  LoraRun run;
  const std::string ckpt = (run.dir.path() / "ckpt").string();
  const std::string lora = "{r: 2, alpha: 4, targets: [q_proj, v_proj]}";
  TrainingRun first = run.build(run.recipe(lora, "save_folder: " + ckpt + "\nsave_interval: 5ba\n"));
  Trainer(first.options.console_log_interval("0ep").max_duration(Time::parse("5ba"))).fit();
  const nlohmann::json base = read_checkpoint(ckpt + "/latest").state.values.at("frozen_base");
  EXPECT_EQ(base.at("weights_sha256").get<std::string>().size(), 64u);
  EXPECT_EQ(base.at("config_sha256").get<std::string>().size(), 64u);
  const auto resume = [&] {
    return error_of([&] {
      TrainingRun r = run.build(run.recipe(lora, "load_path: " + ckpt + "/latest\n"));
      Trainer(r.options.console_log_interval("0ep")).fit();
    });
  };
  EXPECT_EQ(resume(), "no error");
  const fs::path weights = run.dir.path() / "llama" / "model.safetensors", kept = run.dir.path() / "kept.safetensors";
  fs::copy_file(weights, kept);
  torch::manual_seed(1);  // another base of the same architecture
  write_safetensors(weights.string(),
                    model_tensors(*make_hf_model(read_hf_config((run.dir.path() / "llama").string()))));
  EXPECT_THAT(resume(), HasSubstr(ckpt +
                                  "/latest: its LoRA adapters were trained on another base: the frozen "
                                  "model's weights have changed since (SHA-256 " +
                                  base.at("weights_sha256").get<std::string>().substr(0, 12)));
  fs::copy_file(kept, weights, fs::copy_options::overwrite_existing);
  const fs::path config = run.dir.path() / "llama" / "config.json";
  auto changed = nlohmann::json::parse(std::ifstream(config));
  changed["rope_theta"] = 500000.0;
  std::ofstream(config) << changed.dump();
  EXPECT_THAT(resume(), HasSubstr("the frozen model's config.json has changed since"));
}

// A checkpoint holds the adapters with their optimizer state and the run's own, not the base: its
// size within 1.1x of the adapters' and their AdamW moments' bytes.
TEST(LoraAlgorithm, ACheckpointIsTheSizeOfTheAdaptersAndTheirOptimizerState) {
  LoraRun run;
  std::ofstream(run.dir.path() / "llama" / "config.json")
      << R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 23, "hidden_size": 256, "intermediate_size": 512,)"
      << R"( "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64})";
  write_safetensors((run.dir.path() / "llama" / "model.safetensors").string(),
                    model_tensors(*make_hf_model(read_hf_config((run.dir.path() / "llama").string()))));
  const std::string ckpt = (run.dir.path() / "ckpt").string();
  TrainingRun r = run.build(run.recipe("{r: 16, alpha: 32, targets: [q_proj, k_proj, v_proj, o_proj]}",
                                       "save_folder: " + ckpt + "\nsave_interval: 2ba\n"));
  Trainer trainer(r.options.console_log_interval("0ep").max_duration(Time::parse("2ba")));
  trainer.fit();
  const auto* lora = dynamic_cast<const Lora*>(r.options.algorithms().front().get());
  ASSERT_NE(lora, nullptr);
  const auto adapters_and_moments = static_cast<double>(lora->trainable_params() * 4 * 3);  // fp32: A, B, 2 moments
  const auto bytes = static_cast<double>(fs::file_size(fs::canonical(ckpt + "/latest")));
  EXPECT_LT(bytes, 1.1 * adapters_and_moments) << bytes << " bytes for " << adapters_and_moments;
  std::cout << "LoRA checkpoint: " << bytes << " bytes, " << bytes / adapters_and_moments
            << "x the adapters' and their moments' " << adapters_and_moments << "\n";
  EXPECT_GT(bytes, adapters_and_moments);
  EXPECT_LT(bytes * 5, static_cast<double>(fs::file_size(run.dir.path() / "llama" / "model.safetensors")));
}

// A Llama of 110M parameters (bench/llm_bench.sh's, from its config alone): PEFT's default targets
// (q_proj, v_proj) at r 8 train 0.2% of it.
TEST(LoraAlgorithm, TheAdaptersOfALlamaAreUnderOnePercentOfIt) {
  LoraRun run;
  std::ofstream(run.dir.path() / "llama" / "config.json")
      << R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 32000, "hidden_size": 768, "intermediate_size": 2048,)"
      << R"( "num_hidden_layers": 12, "num_attention_heads": 12, "num_key_value_heads": 4, "max_position_embeddings": 64})";
  TrainingRun r = run.build(run.recipe("{r: 8}", "", ", pretrained: false"));
  Trainer trainer(r.options);
  const auto* lora = dynamic_cast<const Lora*>(r.options.algorithms().front().get());
  ASSERT_NE(lora, nullptr);
  EXPECT_EQ(lora->adapted_layers(), 24);
  EXPECT_EQ(lora->trainable_params(), 12 * ((8 * 768 + 768 * 8) + (8 * 768 + 256 * 8)));
  EXPECT_LT(lora->trainable_params() * 100, lora->total_params());
  EXPECT_GT(lora->total_params(), 100'000'000);
}

TEST(LoraAlgorithm, WhatIsWrongIsNamed) {
  LoraRun run;
  const auto error = [&](const std::string& lora) {
    return error_of([&] {
      TrainingRun r = run.build(run.recipe(lora));
      Trainer t(r.options);
    });
  };
  EXPECT_THAT(error("{targets: [qq_proj]}"),
              HasSubstr("lora: targets: 'qq_proj' matches no linear layer of the model (its layers: down_proj, "
                        "gate_proj, k_proj, o_proj, q_proj, up_proj, v_proj"));
  EXPECT_THAT(error("{r: 0}"), HasSubstr("r 0: must be 1 or more"));
  EXPECT_THAT(error("{alpha: -1}"), HasSubstr("alpha -1.000000: must be a positive number"));
  EXPECT_THAT(error("{init: xavier}"), HasSubstr("init 'xavier': expected default, gaussian or {from: ADAPTER_DIR}"));
  EXPECT_THAT(error("{init: {form: x}}"), HasSubstr("form"));
  EXPECT_THAT(error("{init: {from: " + (run.dir.path() / "nothing").string() + "}}"), HasSubstr("not a folder"));
  EXPECT_THAT(error("{rank: 4}"), HasSubstr("rank"));
}

TEST(LoraAlgorithm, AnAdapterForAnotherModelIsRefused) {
  LoraRun run;
  const fs::path adapter = run.dir.path() / "adapter";
  fs::create_directories(adapter);
  std::ofstream(adapter / "adapter_config.json") << R"({"peft_type": "LORA", "r": 2, "lora_alpha": 4})";
  write_safetensors((adapter / "adapter_model.safetensors").string(),
                    {{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", torch::zeros({2, 64})},
                     {"base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", torch::zeros({32, 2})}});
  const auto error = [&] {
    return error_of([&] {
      TrainingRun r = run.build(run.recipe("{init: {from: " + adapter.string() + "}}"));
      Trainer t(r.options);
    });
  };
  EXPECT_THAT(error(), HasSubstr("layer 'model.layers.0.self_attn.q_proj' has lora_A [2, 64] and lora_B [32, 2], this "
                                 "model's take [2, 32] and [32, 2] (r 2); is it an adapter for another model?"));
  write_safetensors((adapter / "adapter_model.safetensors").string(),
                    {{"base_model.model.model.layers.9.self_attn.q_proj.lora_A.weight", torch::zeros({2, 32})},
                     {"base_model.model.model.layers.9.self_attn.q_proj.lora_B.weight", torch::zeros({32, 2})}});
  EXPECT_THAT(error(), HasSubstr("layer 'model.layers.9.self_attn.q_proj' is not one of this model's"));
}

TEST(LoraAlgorithm, ShardingIsRefusedWithTheReason) {
  const auto lora = make_algorithm("lora", nlohmann::json::object());
  EXPECT_EQ(lora->sharding_blocker(Sharding::kNone), "");
  EXPECT_THAT(lora->sharding_blocker(Sharding::kFull), HasSubstr("frozen base"));
  EXPECT_TRUE(lora->required_on_load());
}

}  // namespace
}  // namespace baton
