// baton's Hugging Face models against transformers' (tests/llm/hf_reference.sh makes the folders with
// tests/llm/make_models.py and passes their parent in BATON_HF_MODELS): each folder loaded by baton
// gives the logits transformers gave on the same tokens, within 1e-4 (fp32), and its loss within
// 1e-5, and greedy generation transformers' 64 tokens of two prompts in one batch; one folder's
// weights are bfloat16, one's in shards.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/algorithms/lora.h"
#include "baton/data/dataloader.h"
#include "baton/data/dataset.h"
#include "baton/data/hf_tokenizer.h"
#include "baton/data/text_tokenizer.h"
#include "baton/models/generate.h"
#include "baton/models/hf.h"
#include "baton/models/lora.h"
#include "baton/models/safetensors.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

class HfReference : public ::testing::TestWithParam<std::string> {};

TEST_P(HfReference, LogitsEqualTransformers) {
  const char* root = std::getenv("BATON_HF_MODELS");
  ASSERT_NE(root, nullptr) << "set BATON_HF_MODELS (tests/llm/hf_reference.sh does)";
  const fs::path folder = fs::path(root) / GetParam();
  std::map<std::string, at::Tensor> reference;
  for (const auto& [name, t] : read_safetensors((folder / "reference.safetensors").string())) reference[name] = t;
  const at::Tensor ids = reference.at("ids"), expected = reference.at("logits");
  const auto model = load_hf_model(folder.string());
  model->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor logits = model->forward(Batch{ids, {}});
  ASSERT_EQ(logits.sizes(), expected.sizes());
  const double d = (logits - expected).abs().max().item<double>();
  EXPECT_LT(d, 1e-4) << GetParam();
  std::cout << GetParam() << ": logits within " << d << " of transformers'\n";
  // The loss on the tokens as the tokens data set gives them: windows and their next tokens.
  const int64_t t = ids.size(1) - 1;
  const Batch batch{ids.narrow(1, 0, t), ids.narrow(1, 1, t)};
  const double loss = model->loss(model->forward(batch), batch).item<double>();
  EXPECT_NEAR(loss, reference.at("loss").item<double>(), 1e-5) << GetParam();
  if (!reference.count("greedy")) return;
  // Greedy decoding of two prompts of different lengths in one batch: transformers' 64 tokens each.
  const auto as_ids = [](const at::Tensor& t) {
    const at::Tensor c = t.contiguous();
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  };
  Generator generator(model);
  const auto out = generator.generate({as_ids(reference.at("prompt0")), as_ids(reference.at("prompt1"))},
                                      GenerateOptions().max_new_tokens(64).ignore_eos(true));
  for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(out[i], as_ids(reference.at("greedy")[i])) << GetParam() << " prompt " << i;
}

INSTANTIATE_TEST_SUITE_P(Models, HfReference,
                         ::testing::Values("gpt2", "gpt2-untied-relu", "llama-gqa", "llama-tied-bias", "llama3-rope",
                                           "qwen2"));

}  // namespace
}  // namespace baton

namespace baton {
namespace {

// Byte-level BPE tokenizers trained by `tokenizers` (tests/llm/make_tokenizers.py, in
// BATON_HF_TOKENIZERS): baton's ids of the 1.6 MB corpus are theirs, every one; decoding gives the
// corpus back.
class HfTokenizerReference : public ::testing::TestWithParam<std::string> {};

TEST_P(HfTokenizerReference, IdsEqualTokenizers) {
  const char* root = std::getenv("BATON_HF_TOKENIZERS");
  ASSERT_NE(root, nullptr) << "set BATON_HF_TOKENIZERS (tests/llm/hf_reference.sh does)";
  const fs::path folder = fs::path(root) / GetParam();
  std::ifstream corpus_file(fs::path(root) / "corpus.txt", std::ios::binary);
  const std::string corpus((std::istreambuf_iterator<char>(corpus_file)), std::istreambuf_iterator<char>());
  std::ifstream ids_file(folder / "ids.bin", std::ios::binary);
  std::vector<int32_t> expected(fs::file_size(folder / "ids.bin") / sizeof(int32_t));
  ids_file.read(reinterpret_cast<char*>(expected.data()), static_cast<std::streamsize>(expected.size() * 4));
  const HfTokenizer tokenizer = HfTokenizer::load(folder.string());
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int64_t> ids = tokenizer.encode(corpus);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::size_t first_difference = std::min(ids.size(), expected.size());
  for (std::size_t i = 0; i < first_difference; ++i) {
    if (ids[i] != expected[i]) first_difference = i;
  }
  if (first_difference < ids.size() || ids.size() != expected.size()) {
    const std::size_t from = first_difference > 3 ? first_difference - 3 : 0;
    std::vector<int64_t> mine(ids.begin() + from, ids.begin() + std::min(ids.size(), first_difference + 4));
    std::vector<int64_t> theirs(expected.begin() + from,
                                expected.begin() + std::min(expected.size(), first_difference + 4));
    ADD_FAILURE() << "ids differ from id " << first_difference << ": baton's " << ::testing::PrintToString(mine) << " '"
                  << tokenizer.decode(mine) << "', tokenizers' " << ::testing::PrintToString(theirs) << " '"
                  << tokenizer.decode(theirs) << "'";
  }
  EXPECT_EQ(tokenizer.decode(ids), corpus);
  std::cout << GetParam() << ": " << corpus.size() << " bytes, " << ids.size() << " ids, as tokenizers' ("
            << corpus.size() / seconds / 1e6 << " MB/s, one thread, cold cache)\n";
}

// A prompt's ids with the special tokens, as transformers' tokenizer(prompt) gives them (Llama 3's
// <|begin_of_text|> first; nothing added for GPT-2's).
TEST_P(HfTokenizerReference, PromptIdsEqualTransformersTokenizer) {
  const char* root = std::getenv("BATON_HF_TOKENIZERS");
  ASSERT_NE(root, nullptr) << "set BATON_HF_TOKENIZERS (tests/llm/hf_reference.sh does)";
  const fs::path folder = fs::path(root) / GetParam();
  std::ifstream file(folder / "prompts.json");
  const auto prompts = nlohmann::json::parse(file);
  const TextTokenizer tokenizer = TextTokenizer::load(folder.string());
  ASSERT_FALSE(prompts.empty());
  for (const auto& p : prompts) {
    const auto text = p.at("text").get<std::string>();
    EXPECT_EQ(tokenizer.encode_with_special_tokens(text), p.at("ids").get<std::vector<int64_t>>()) << text;
  }
  if (GetParam() == "llama3-bpe") {  // the template is there to follow
    EXPECT_EQ(prompts[0]["ids"][0].get<int64_t>(), *HfTokenizer::load(folder.string()).token_id("<|begin_of_text|>"));
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, HfTokenizerReference, ::testing::Values("gpt2-bpe", "llama3-bpe"));

// ---- LoRA against PEFT (tests/llm/make_lora.py: the base, PEFT's adapters, batches and losses) ----

fs::path lora_folder() {
  const char* root = std::getenv("BATON_HF_MODELS");
  return root == nullptr ? fs::path() : fs::path(root) / "lora";
}

struct LossRecorder : Callback {
  std::vector<double> losses;
  void after_loss(State& state, Logger& /*logger*/) override { losses.push_back(state.loss.item<double>()); }
};

// PEFT's 50 AdamW steps on the same base, batches and initial adapter (baton starts from the adapter
// PEFT wrote): every loss within 1e-4. Then baton's adapter goes out as a PEFT folder, and its logits
// of a batch beside it, for make_lora.py check (PEFT loads it and must give the same logits).
TEST(LoraPeft, FiftyStepsLossesEqualPeftsAndTheAdapterGoesOutForPeft) {
  const fs::path folder = lora_folder();
  ASSERT_TRUE(fs::exists(folder / "reference.safetensors")) << "tests/llm/hf_reference.sh makes it";
  std::map<std::string, at::Tensor> ref;
  for (auto& [name, t] : read_safetensors((folder / "reference.safetensors").string())) ref[name] = t;
  const at::Tensor ids = ref.at("ids");  // [50, 4, 17]
  const int64_t steps = ids.size(0), batch = ids.size(1), context = ids.size(2) - 1;
  const at::Tensor flat = ids.reshape({steps * batch, context + 1});
  auto data =
      std::make_shared<TensorDataset>(flat.narrow(1, 0, context).contiguous(), flat.narrow(1, 1, context).contiguous());
  auto model = load_hf_model((folder / "base").string());
  auto recorder = std::make_shared<LossRecorder>();
  auto lora = std::make_shared<Lora>(LoraOptions().init_from((folder / "init").string()));
  Trainer trainer(
      TrainerOptions()
          .model(model)
          .train_dataloader(std::make_shared<DataLoader>(data, DataLoaderOptions().batch_size(batch).shuffle(false)))
          .optimizers(
              {make_optimizer(OptimizerOptions().name("adamw").lr(1e-2).weight_decay(0.0), model->parameters())})
          .algorithms({lora})
          .callbacks({recorder})
          .max_duration(Time::parse(std::to_string(steps) + "ba"))
          .progress_bar(false)
          .console_log_interval(Time::parse("0ep")));
  trainer.fit();
  const at::Tensor peft = ref.at("losses");
  ASSERT_EQ(recorder->losses.size(), static_cast<std::size_t>(steps));
  double worst = 0;
  for (int64_t i = 0; i < steps; ++i) {
    worst = std::max(worst, std::abs(recorder->losses[i] - peft[i].item<double>()));
    EXPECT_NEAR(recorder->losses[i], peft[i].item<double>(), 1e-4) << "step " << i;
  }
  EXPECT_LT(peft[steps - 1].item<double>(), peft[0].item<double>() - 0.2) << "the reference learns";
  std::cout << "LoRA: 50 losses within " << worst << " of PEFT's; " << lora->trainable_params() << " of "
            << lora->total_params() << " parameters train\n";

  fs::create_directories(folder / "baton-adapter");
  EXPECT_EQ(save_peft_adapter(*model, (folder / "baton-adapter").string(), (folder / "base").string()), 8u);
  model->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor probe = ids[0].narrow(1, 0, context).contiguous();
  const at::Tensor logits = dynamic_cast<Classifier&>(*model).module().forward(probe);
  write_safetensors((folder / "baton-logits.safetensors").string(), {{"ids", probe}, {"logits", logits.contiguous()}});
}

// PEFT's trained adapter put on baton's model and merged: the weights merge_and_unload() gave,
// within 1e-5.
TEST(LoraPeft, MergedWeightsEqualPeftsMergeAndUnload) {
  const fs::path folder = lora_folder();
  ASSERT_TRUE(fs::exists(folder / "merged.safetensors")) << "tests/llm/hf_reference.sh makes it";
  auto model = load_hf_model((folder / "base").string());
  const PeftAdapter adapter = read_peft_adapter((folder / "trained").string());
  std::map<std::string, AdaptableLinear> layers;
  for (auto& [name, layer] : adaptable_layers(*model)) layers.emplace(name, layer);
  for (const auto& [name, pair] : adapter.layers) {
    AdaptableLinear& l = layers.at(name);
    l->add_adapter(adapter.spec);
    torch::NoGradGuard no_grad;
    l->lora_A->weight.copy_(pair.first);
    l->lora_B->weight.copy_(pair.second);
  }
  EXPECT_EQ(merge_adapters(*model), 4);
  std::map<std::string, at::Tensor> ours;
  for (auto& [name, t] : model_tensors(*model)) ours[name] = t;
  int compared = 0;
  for (const auto& [name, theirs] : read_safetensors((folder / "merged.safetensors").string())) {
    if (!ours.count(name)) continue;  // a tied head's second name
    EXPECT_TRUE(torch::allclose(ours.at(name), theirs, 1e-5, 1e-5)) << name;
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int>(ours.size()));
}

}  // namespace
}  // namespace baton
