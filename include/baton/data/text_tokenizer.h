// A language model's tokenizer, whichever kind its folder holds: Hugging Face's tokenizer.json
// (byte-level BPE, HfTokenizer) or SentencePiece's tokenizer.model (Tokenizer). What `baton tokenize
// --tokenizer`, `baton generate` and `baton predict` read.
//
//   auto tokenizer = baton::TextTokenizer::load("models/my-llama");  // a folder or the file itself
//   std::vector<int64_t> ids = tokenizer.encode("Hello world");      // nothing added
//   std::vector<int64_t> prompt = tokenizer.encode_with_special_tokens("Hello");  // <|begin_of_text|> first
//   std::string text = tokenizer.decode(ids);                        // == "Hello world"
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace baton {

class Tokenizer;

class TextTokenizer {
 public:
  // A folder (its tokenizer.json, else its tokenizer.model), a tokenizer.json or a SentencePiece
  // .model. The end of a text: tokenizer_config.json's eos_token, else config.json's eos_token_id,
  // else the tokenizer's own (SentencePiece's </s>; <|endoftext|>, <|end_of_text|> or </s> among a
  // tokenizer.json's tokens). Throws std::invalid_argument naming the path: no tokenizer there, or
  // one that cannot be read (the reader's message).
  static TextTokenizer load(const std::string& path);
  // A SentencePiece tokenizer already loaded (baton tokenize --vocab-size trains one).
  static TextTokenizer of(std::shared_ptr<const Tokenizer> sentencepiece);

  std::vector<int64_t> encode(std::string_view text) const;
  // The ids with the special tokens the model's tokenizer puts around a text, as transformers'
  // tokenizer(text) gives them (what a prompt is given to the model as): tokenizer_config.json's
  // add_bos_token and add_eos_token where it says them, else the tokenizer.json's post-processor
  // (Llama 3's <|begin_of_text|> before the text; nothing for GPT-2's and Qwen's), else for
  // SentencePiece its <s> (Llama 2's, Mistral's). Throws std::invalid_argument (from load) when
  // tokenizer_config.json asks for a token the tokenizer lacks.
  std::vector<int64_t> encode_with_special_tokens(std::string_view text) const;
  std::string decode(const std::vector<int64_t>& ids) const;
  int64_t vocab_size() const;       // one past the largest id
  int64_t end_of_text_id() const;   // -1: none
  const std::string& file() const;  // the file read ("" for `of`)
  // The SentencePiece tokenizer, or nullptr for a tokenizer.json's.
  const Tokenizer* sentencepiece() const;

  // Where `text` may be cut so that encoding the parts one after another gives the ids of the whole,
  // about every `every` bytes: after a line break between two printable ASCII characters, where the
  // byte-level pre-tokenizers (GPT-2's, Llama 3's, Qwen's) never join across. None for SentencePiece
  // (its dummy prefix makes no cut safe): the whole text is one part.
  std::vector<std::string_view> parts(std::string_view text, std::size_t every) const;

 private:
  struct Impl;
  explicit TextTokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;  // shared: a TextTokenizer copies cheaply
};

}  // namespace baton
