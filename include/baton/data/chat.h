// Instruction and chat data for fine-tuning: JSON lines of {"prompt": ..., "completion": ...} or
// {"messages": [{"role": ..., "content": ...}, ...]}, tokenized with the model's tokenizer through a
// template, with the loss on the answers only.
//
//   auto tokenizer = baton::TextTokenizer::load("models/my-llama");
//   auto data = baton::ChatDataset::open({"sft/train.jsonl"}, tokenizer,
//                                        baton::ChatOptions().context(2048).packing(true));
//   baton::Batch b = data->get_batch(torch::arange(4));
//   // b.input, b.target: int64 [4, 2048]; b.target is kIgnoredTarget (-100) off the answers and on
//   // padding; packed, b.positions restarts at 0 where each example starts.
//
// An example is its tokens and, for each, whether the loss counts it (the answers': every assistant
// message of a conversation, the completion of a prompt; the end-of-text token appended after the
// last). Its targets are its next tokens where those are counted, kIgnoredTarget elsewhere (its
// last token has none). Without packing each example is a window of `context` tokens, padded; with
// packing, examples in file order fill windows one after another (an example never split), each
// attending only to itself: the loss of every example is the one it has alone.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "baton/core/options.h"
#include "baton/data/dataset.h"
#include "baton/data/text_tokenizer.h"

namespace baton {

class ChatOptions {
  // Tokens in a window: an example longer is truncated or dropped (`overlong`).
  BATON_ARG(int64_t, context) = 2048;
  // chatml (<|im_start|>role\n...<|im_end|>), llama3 (<|start_header_id|>role<|end_header_id|>\n\n...
  // <|eot_id|>), or a format string whose {name}s are a record's fields, the answer starting at
  // {completion} ("### Question: {prompt}\n### Answer: {completion}"; {{ and }} are braces).
  BATON_ARG(std::string, chat_template) = "chatml";
  // The loss counts every token, the prompts' too.
  BATON_ARG(bool, train_on_prompt) = false;
  // The tokenizer's end of text after an example's last answer (unless the template's end of turn is it).
  BATON_ARG(bool, add_eos) = true;
  // An example longer than `context`: "truncate" (its first `context` tokens, when an answer's
  // token remains) or "drop".
  BATON_ARG(std::string, overlong) = "truncate";
  // Several examples a window (Batch::positions: attention kept inside each).
  BATON_ARG(bool, packing) = false;
  // Threads that tokenize (0: the machine's cores).
  BATON_ARG(int, threads) = 0;
};

// What open() made of the files.
struct ChatStats {
  int64_t records = 0;         // lines holding an example
  int64_t truncated = 0;       // examples longer than `context` cut to it
  int64_t dropped = 0;         // examples left out: overlong: drop, or nothing to train on once truncated
  int64_t tokens = 0;          // the kept examples' tokens
  int64_t trained_tokens = 0;  // of those, the targets the loss counts
  int64_t windows = 0;
};

class ChatDataset : public Dataset {
 public:
  ~ChatDataset() override;
  // Reads every line of `files` (JSON lines, blank lines skipped) and tokenizes it. Throws
  // std::invalid_argument "FILE:LINE: why" for a line that is not a JSON object, lacks the fields
  // its template needs or holds a malformed message, or naming the option (a template without
  // {completion}, an unknown overlong); std::runtime_error (FileError) for a file that cannot be read;
  // std::invalid_argument when no example is left.
  static std::shared_ptr<ChatDataset> open(const std::vector<std::string>& files, const TextTokenizer& tokenizer,
                                           const ChatOptions& options);
  // Throws std::invalid_argument naming what is wrong with `chat_template` (no {completion}, an
  // unclosed brace): what a recipe checks before any file is read.
  static void check_template(const std::string& chat_template);

  int64_t size() const override;  // windows
  Batch get_batch(const at::Tensor& indices) const override;
  std::vector<int64_t> input_shape() const override;
  int64_t tokens_per_example() const override;  // context
  int64_t num_classes() const override;         // the tokenizer's vocabulary
  bool gather_is_cheap() const override { return true; }
  // "1,000 examples in 250 windows of 2048 tokens (93.1% of them the examples'), 120,000 trained
  // tokens, 3 truncated, 1 left out (...)".
  std::string summary() const override;

  const ChatStats& stats() const;
  const ChatOptions& options() const;
  // Example i's tokens and which of them the loss counts (before any window): what a test checks.
  std::vector<int64_t> example_tokens(int64_t i) const;
  std::vector<bool> example_trained(int64_t i) const;
  int64_t examples() const;

 private:
  ChatDataset();

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
