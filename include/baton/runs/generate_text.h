// What `baton generate` does, as a library call: a Hugging Face model (its folder, or a recipe's
// model with a checkpoint's weights, or a folder with a PEFT adapter on it) continuing text prompts, tokenized with the
// folder's tokenizer (tokenizer.json, or SentencePiece's tokenizer.model), its generation_config.json's sampling as the
// defaults.
//
//   baton::GenerateRequest request;
//   request.source = "models/my-llama";
//   request.prompts = {"The capital of France is"};
//   for (const auto& g : baton::generate_text(request)) std::printf("%s\n", g.text.c_str());
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace baton {

struct GenerateRequest {
  std::string source{};             // a Hugging Face folder, or a recipe whose model is `hf`
  std::string load{};               // with a recipe: the checkpoint (or model.pt) whose weights generate
  std::string adapter{};            // with a folder: a PEFT LoRA adapter folder put on its model
  std::vector<std::string> sets{};  // with a recipe: overrides
  std::vector<std::string> prompts{};
  std::string device = "cpu";
  // Unset: generation_config.json's (do_sample false: greedy), else greedy and 64 new tokens.
  std::optional<int64_t> max_new_tokens, top_k;
  std::optional<double> temperature, top_p, repetition_penalty;
  uint64_t seed = 0;
  bool ignore_eos = false;
  // The prompts' ids with the special tokens the tokenizer puts around a text (Llama's BOS), as
  // transformers' tokenizer(prompt) gives them; false: the text's ids alone (tokenize --ids').
  bool special_tokens = true;
};

struct Generated {
  std::string prompt;
  std::vector<int64_t> ids;  // the new tokens'
  std::string text;          // their text
  int64_t truncated = 0;     // tokens dropped from the prompt's front (longer than the context allows)
};

// Each prompt's continuation. LoRA adapters (a LoRA run's checkpoint, or `adapter`) are folded into
// the weights first, as `baton export --format hf --merge-lora` does: the same tokens as the merged
// model's. `on_text` (optional) gets (prompt, new text) as tokens come. Throws
// RecipeError (bad input: a source that is neither, no tokenizer beside the model, a token outside
// the model's vocabulary, max_new_tokens out of range) before anything is generated.
std::vector<Generated> generate_text(const GenerateRequest& request,
                                     const std::function<void(std::size_t, const std::string&)>& on_text = {});

}  // namespace baton
