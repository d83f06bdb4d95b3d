// A SentencePiece tokenizer (Debian's libsentencepiece): trained on text files or loaded from a
// `.model` file, and the text of files turned into token shards (baton tokenize).
//
//   baton::Tokenizer t = baton::Tokenizer::train({"corpus.txt"}, "out/tokenizer", {.vocab_size = 4096});
//   std::vector<int> ids = t.encode("Hello world");          // t.decode(ids) == "Hello world"
//   baton::tokenize_files({"corpus.txt"}, t, {.out = "out"});  // out/train_000000.bin, out/val_000000.bin
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "baton/data/text_tokenizer.h"

struct baton_spm;  // SentencePiece's model, behind libbaton_spm (src/data/spm/spm_api.h says why)

namespace baton {

// The tokenizer's file beside a corpus's shards: `model: gpt` on those shards takes its vocabulary
// size from it.
inline constexpr const char* kTokenizerFile = "tokenizer.model";

struct TokenizerTraining {
  int64_t vocab_size = 8192;        // at most 65536: the token shards hold uint16
  std::string model_type = "bpe";   // or unigram, char, word (SentencePiece's)
  int64_t max_sentences = 2000000;  // lines sampled to train on (SentencePiece's input_sentence_size)
  int threads = 0;                  // 0: the cores
};

class Tokenizer {
 public:
  // Loads a SentencePiece model. Throws std::runtime_error naming the file when it is missing, not a
  // regular file, or not a SentencePiece model (and when libbaton_spm, beside libbaton_data, is
  // missing).
  static Tokenizer load(const std::string& path);
  // Trains on the lines of `texts` and writes PREFIX.model (and PREFIX.vocab). Throws
  // std::invalid_argument for a bad vocab_size or model_type, std::runtime_error naming a text that
  // cannot be read or a training SentencePiece refuses (too small a corpus for the vocabulary).
  static Tokenizer train(const std::vector<std::string>& texts, const std::string& prefix,
                         const TokenizerTraining& options);

  Tokenizer(Tokenizer&& other) noexcept;
  Tokenizer& operator=(Tokenizer&& other) noexcept;
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;
  ~Tokenizer();

  int64_t vocab_size() const;
  std::vector<int> encode(const std::string& text) const;
  std::string decode(const std::vector<int>& ids) const;
  // The token of a line break (SentencePiece drops it from a line: text keeps it with byte pieces),
  // and of a document's end; -1 when the model has none.
  int newline_id() const;
  int end_of_text_id() const;
  int begin_of_text_id() const;  // the model's <s> (bos_id), -1 when it has none
  // The id of a piece of the vocabulary ("<s>", "▁the"), -1 when it is not one.
  int piece_id(const std::string& piece) const;
  // The model as SentencePiece serialises it (what PREFIX.model holds).
  std::string serialized() const;

 private:
  explicit Tokenizer(baton_spm* model);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct TokenizeOptions {
  std::string out;                     // the folder of shards (made when missing)
  double val_fraction = 0.1;           // the end of each file held out for validation
  int64_t shard_tokens = 100'000'000;  // tokens per shard (llm.c's size)
  int threads = 0;                     // a tokenizer.json's: texts encoded on this many threads (0: the cores)
};

struct TokenizeSummary {
  int64_t train_tokens = 0;
  int64_t val_tokens = 0;
  std::vector<std::string> shards;
  int64_t token_bytes = 2;  // the shards' tokens: 2 (uint16), or 4 (uint32) for a vocabulary over 65,536
};

// Each file's text encoded, then the end-of-text token (when the tokenizer has one), into
// OUT/train_NNNNNN.bin and OUT/val_NNNNNN.bin (llm.c's format: uint16, or uint32 when the vocabulary
// has more than 65,536 tokens). A SentencePiece tokenizer encodes line by line, each line followed
// by the newline token (SentencePiece drops line breaks); a tokenizer.json's gives the ids of the
// whole file (encoded in parts on several threads where that changes nothing: TextTokenizer::parts).
// Throws std::runtime_error naming an unreadable text, std::invalid_argument for bad options.
TokenizeSummary tokenize_files(const std::vector<std::string>& texts, const TextTokenizer& tokenizer,
                               const TokenizeOptions& options);
TokenizeSummary tokenize_files(const std::vector<std::string>& texts, const Tokenizer& tokenizer,
                               const TokenizeOptions& options);

}  // namespace baton
