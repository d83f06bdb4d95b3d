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

#include "baton/data/hf_tokenizer.h"
#include "baton/data/text_tokenizer.h"
#include "baton/models/generate.h"
#include "baton/models/hf.h"
#include "baton/models/safetensors.h"

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

}  // namespace
}  // namespace baton
