// Generation (src/models/generate.cpp) on random-weight Hugging Face models: with the cache, greedy
// decoding gives the tokens of recomputing the whole sequence each step; a batch of prompts of
// different lengths gives each prompt's own; sampling is reproducible by seed and top-k 1 is greedy;
// stop tokens end a sequence; bad requests are named. tests/llm/ compares with transformers.
#include "baton/models/generate.h"

#include <fstream>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/models/hf.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

// Weights wider than Hugging Face's 0.02, so that the most likely token stands out.
std::shared_ptr<Model> model(const std::string& family) {
  testing::TempDir dir("generate");
  nlohmann::json config = family == "gpt2" ? nlohmann::json{{"architectures", {"GPT2LMHeadModel"}},
                                                            {"vocab_size", 40},
                                                            {"n_embd", 32},
                                                            {"n_layer", 2},
                                                            {"n_head", 4},
                                                            {"n_positions", 48},
                                                            {"initializer_range", 0.3},
                                                            {"eos_token_id", 3}}
                                           : nlohmann::json{{"architectures", {"LlamaForCausalLM"}},
                                                            {"vocab_size", 40},
                                                            {"hidden_size", 32},
                                                            {"intermediate_size", 48},
                                                            {"num_hidden_layers", 2},
                                                            {"num_attention_heads", 4},
                                                            {"num_key_value_heads", 2},
                                                            {"max_position_embeddings", 48},
                                                            {"initializer_range", 0.3},
                                                            {"eos_token_id", 3}};
  std::ofstream(dir.file("config.json")) << config.dump();
  torch::manual_seed(0);
  return make_hf_model(read_hf_config(dir.str()));
}

// Greedy decoding without a cache: the whole sequence through forward() each step.
std::vector<int64_t> recomputed(Model& m, std::vector<int64_t> ids, int64_t steps) {
  torch::NoGradGuard no_grad;
  m.eval();
  std::vector<int64_t> out;
  for (int64_t i = 0; i < steps; ++i) {
    const at::Tensor logits = m.forward(Batch{torch::tensor(ids, torch::kLong).unsqueeze(0), {}});
    out.push_back(logits[0][-1].argmax().item<int64_t>());
    ids.push_back(out.back());
  }
  return out;
}

TEST(Generator, GreedyWithTheCacheIsGreedyRecomputedAndBatchesAreEachPromptsOwn) {
  for (const std::string family : {"gpt2", "llama"}) {
    SCOPED_TRACE(family);
    const auto m = model(family);
    Generator generator(m);
    const std::vector<std::vector<int64_t>> prompts = {{5, 6, 7}, {9, 10, 11, 12, 13, 14, 15, 16}};
    const auto opts = GenerateOptions().max_new_tokens(24).ignore_eos(true);
    const auto batched = generator.generate(prompts, opts);
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(batched[i], recomputed(*m, prompts[i], 24)) << "prompt " << i;
      EXPECT_EQ(generator.generate({prompts[i]}, opts)[0], batched[i]) << "prompt " << i << " alone";
    }
    // use_cache false: the padded batch recomputed whole each step gives the same tokens.
    EXPECT_EQ(generator.generate(prompts, GenerateOptions(opts).use_cache(false)), batched);
  }
}

TEST(Generator, SamplingIsReproducibleBySeedAndTopK1IsGreedy) {
  Generator generator(model("llama"));
  const std::vector<std::vector<int64_t>> prompt = {{5, 6, 7}};
  const auto sampled = [&](uint64_t seed, GenerateOptions o = GenerateOptions().temperature(1.0)) {
    return generator.generate(prompt, o.max_new_tokens(32).ignore_eos(true).seed(seed))[0];
  };
  EXPECT_EQ(sampled(1), sampled(1));
  EXPECT_NE(sampled(1), sampled(2));
  const auto greedy = generator.generate(prompt, GenerateOptions().max_new_tokens(32).ignore_eos(true))[0];
  EXPECT_EQ(sampled(3, GenerateOptions().temperature(0.7).top_k(1)), greedy);
  EXPECT_EQ(sampled(4, GenerateOptions().temperature(0.7).top_p(1e-6)), greedy) << "top-p keeps the most likely";
  // A strong repetition penalty: no token of the prompt or of what came is chosen again by greedy.
  const auto fresh =
      generator.generate(prompt, GenerateOptions().max_new_tokens(20).ignore_eos(true).repetition_penalty(1e6))[0];
  std::set<int64_t> seen(prompt[0].begin(), prompt[0].end());
  for (const int64_t t : fresh) EXPECT_TRUE(seen.insert(t).second) << t << " twice";
}

TEST(Generator, AStopTokenEndsItsSequenceAndStreamsAsItComes) {
  const auto m = model("gpt2");
  Generator generator(m);
  const std::vector<std::vector<int64_t>> prompts = {{5, 6, 7}, {8}};
  const auto free_run = generator.generate(prompts, GenerateOptions().max_new_tokens(20).ignore_eos(true));
  const int64_t stop = free_run[0][4];  // the fifth token of the first prompt's run
  std::vector<std::pair<std::size_t, int64_t>> streamed;
  const auto stopped = generator.generate(prompts, GenerateOptions().max_new_tokens(20).stop_tokens({stop}),
                                          [&](std::size_t i, int64_t t) { streamed.emplace_back(i, t); });
  const auto first = std::find(free_run[0].begin(), free_run[0].end(), stop);
  EXPECT_EQ(stopped[0], std::vector<int64_t>(free_run[0].begin(), first + 1)) << "up to the stop token, kept";
  std::size_t count = 0;
  for (const auto& o : stopped) count += o.size();
  EXPECT_EQ(streamed.size(), count);
  EXPECT_EQ(streamed.front(), std::make_pair(std::size_t{0}, free_run[0][0]));
}

TEST(Generator, BadRequestsAreNamedAndLongPromptsKeepTheirEnds) {
  Generator generator(model("llama"));
  EXPECT_THAT(error_of([&] { generator.generate({{1}}, GenerateOptions().max_new_tokens(0)); }),
              HasSubstr("max_new_tokens is 0; expected 1 to 47"));
  EXPECT_THAT(error_of([&] {
                generator.generate({{1, 40}}, GenerateOptions().max_new_tokens(4));
              }),
              HasSubstr("prompt 0 holds token 40, outside the model's vocabulary of 40"));
  EXPECT_THAT(error_of([&] {
                generator.generate({{1}, {}}, GenerateOptions().max_new_tokens(4));
              }),
              HasSubstr("prompt 1 has no tokens"));
  std::vector<int64_t> long_prompt(60, 7);
  const auto out = generator.generate({long_prompt}, GenerateOptions().max_new_tokens(8).ignore_eos(true));
  EXPECT_EQ(out[0].size(), 8U);
  EXPECT_EQ(generator.truncated(), std::vector<int64_t>{20}) << "48 - 8 = 40 tokens kept";
  EXPECT_THAT(error_of([] { Generator(std::make_shared<Classifier>(torch::nn::Linear(2, 2).ptr())); }),
              HasSubstr("not a Hugging Face one"));
}

}  // namespace
}  // namespace baton
