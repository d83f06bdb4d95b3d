// Text generation with a Hugging Face model (baton/models/hf.h): a key/value cache, greedy decoding
// or sampling (temperature, top-k, top-p), a repetition penalty, stop tokens; prompts of different
// lengths in one batch (left-padded, as transformers' generate does); each new token handed to a
// callback as it comes.
//
//   baton::Generator generator(baton::load_hf_model("models/my-llama"));
//   auto out = generator.generate({{1, 450, 7483}}, baton::GenerateOptions().max_new_tokens(64));
//   // out[0]: the new tokens of prompt 0 (its stop token last, when one came)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "baton/core/options.h"
#include "baton/models/model.h"

namespace baton {

struct GenerateOptions {
  BATON_ARG(int64_t, max_new_tokens) = 64;
  BATON_ARG(double, temperature) = 0.0;         // 0: greedy (the most likely token)
  BATON_ARG(int64_t, top_k) = 0;                // sample among the k most likely (0: all)
  BATON_ARG(double, top_p) = 1.0;               // among the fewest whose probability reaches p
  BATON_ARG(double, repetition_penalty) = 1.0;  // > 1: tokens already there less likely (CTRL's)
  // A sequence ends at one of these (kept as its last token). Default: the config's eos_token_id.
  BATON_ARG(std::vector<int64_t>, stop_tokens);
  BATON_ARG(bool, ignore_eos) = false;  // no stop token: always max_new_tokens
  BATON_ARG(uint64_t, seed) = 0;        // sampling's generator: the same seed, the same tokens
  BATON_ARG(int64_t, pad_token) = 0;    // what pads shorter prompts (never attended to)
  // The key/value cache: each step runs the new token only. false: every token so far again each
  // step (the same tokens, slower: what the cache saves, as bench/llm_bench measures).
  BATON_ARG(bool, use_cache) = true;
};

class Generator {
 public:
  // Throws std::invalid_argument unless `model` is a Hugging Face one (make_hf_model's).
  explicit Generator(std::shared_ptr<Model> model);
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // Each prompt's new tokens. Prompts (token ids, none empty) longer than the model's context less
  // max_new_tokens keep their last tokens (truncated() says how many were dropped); `on_token`
  // (optional) gets (prompt, token) as each is chosen. Throws std::invalid_argument for
  // max_new_tokens < 1 or not below the context, a token outside the vocabulary, an empty prompt.
  std::vector<std::vector<int64_t>> generate(const std::vector<std::vector<int64_t>>& prompts,
                                             const GenerateOptions& options,
                                             const std::function<void(std::size_t, int64_t)>& on_token = {});
  // Tokens dropped from the front of each prompt of the last generate() (0: none).
  const std::vector<int64_t>& truncated() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
