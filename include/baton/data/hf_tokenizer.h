// Hugging Face tokenizers of the byte-level BPE kind (GPT-2's, Llama 3's, Qwen's), read from their
// tokenizer.json and giving the ids Hugging Face `tokenizers` gives: the added tokens matched first,
// the pre-tokenizer's regular expression (PCRE2, Unicode classes) splitting the rest, each piece's
// bytes mapped to GPT-2's printable characters and merged by the merges' ranks.
//
//   auto tokenizer = baton::HfTokenizer::load("models/my-llama");    // or .../tokenizer.json
//   std::vector<int64_t> ids = tokenizer.encode("Hello world");       // nothing added
//   std::string text = tokenizer.decode(ids);                         // == "Hello world"
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton {

class HfTokenizer {
 public:
  // tokenizer.json, or a folder holding it. Throws std::invalid_argument naming the file and what
  // it cannot read: not JSON, a model other than BPE, a normalizer or pre-tokenizer baton does not
  // implement (named), a merge of tokens the vocabulary lacks.
  static HfTokenizer load(const std::string& path);
  ~HfTokenizer();
  HfTokenizer(HfTokenizer&&) noexcept;
  HfTokenizer& operator=(HfTokenizer&&) noexcept;

  // The ids of `text` (UTF-8), no special token added (added tokens in the text are matched).
  std::vector<int64_t> encode(std::string_view text) const;
  // The text of `ids` (added tokens as their content); ids the tokenizer lacks are skipped, as
  // tokenizers skips them (a model's embeddings often outnumber its tokenizer's ids).
  std::string decode(const std::vector<int64_t>& ids) const;
  // One past the largest id (the vocabulary's and the added tokens').
  int64_t vocab_size() const;
  // The id of a token's text (an added token's content, or a vocabulary entry), if there is one.
  std::optional<int64_t> token_id(const std::string& token) const;
  // The ids the post-processor puts around one text (what transformers' tokenizer(text) adds:
  // Llama 3's <|begin_of_text|> before it): a TemplateProcessing's single template, alone or in a
  // Sequence, or Bert's and Roberta's cls and sep; none for ByteLevel's (GPT-2's, Qwen's) or none.
  struct Template {
    std::vector<int64_t> before, after;
  };
  const Template& single_template() const;

 private:
  HfTokenizer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
