// Token shards: tokenized corpora in llm.c's format (nanoGPT's and llm.c's `.bin` files), read a
// window at a time and cut into windows of `context` tokens for next-token prediction.
//
//   auto shards = baton::expand_globs({"data/train_*.bin"}, "train_files");
//   auto train = baton::TokenDataset::open(shards, baton::TokenOptions().context(1024).vocab_size(50257));
//   baton::Batch b = train->get_epoch_batch(torch::arange(8), /*epoch=*/0);  // int64 [8, 1024] twice
//
// A shard is a header of 256 little-endian int32 (magic, version, the token count, the rest 0) and
// then that many tokens: uint16 (magic 20240520, version 1: llm.c's GPT-2 shards) or, for a
// vocabulary over 65,536 tokens, uint32 (magic 20240801, version 7: llm.c's Llama 3 shards). Shards are never read
// whole into memory (each window is read where it is, pread): a corpus larger than memory trains, and the operating
// system's page cache is the only copy. A shard that changes while it is read (cut short, rewritten in place) is an
// error naming it, never a crash (a memory map would have been a SIGBUS).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "baton/core/options.h"
#include "baton/data/dataset.h"

namespace baton {

inline constexpr int32_t kTokenShardMagic = 20240520;  // uint16 tokens
inline constexpr int32_t kTokenShardVersion = 1;
inline constexpr int32_t kTokenShardMagic32 = 20240801;  // uint32 tokens
inline constexpr int32_t kTokenShardVersion32 = 7;
inline constexpr int64_t kTokenShardHeaderInts = 256;

// One shard: its header checked once, its tokens read where they are (a descriptor kept open).
class TokenShard {
 public:
  // Throws std::runtime_error naming the file: not a regular file, shorter than the header, a wrong
  // magic or version, a token count that does not match the file's size.
  explicit TokenShard(const std::string& path);
  ~TokenShard();
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;

  const std::string& path() const;
  int64_t size() const;         // tokens
  int64_t token_bytes() const;  // 2 (uint16) or 4 (uint32)
  // Tokens [start, start + count) into `out`. Throws std::runtime_error naming the file when it
  // changed since it was opened (cut short, grown, rewritten in place) or cannot be read; a file
  // replaced by a rename goes on being read as it was opened.
  void read(int64_t start, int64_t count, uint32_t* out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes `tokens` as a shard at `path` (a temporary file renamed into place: a kill leaves the old
// file or the new one): uint16, or uint32 for the second. Throws FileError when it cannot be written.
void write_token_shard(const std::string& path, const std::vector<uint16_t>& tokens);
void write_token_shard(const std::string& path, const std::vector<uint32_t>& tokens);

// The regular files that `patterns` (shell globs, or plain paths) name, sorted and without repeats.
// Throws std::runtime_error naming the pattern that matches no file ("`what`: ...").
std::vector<std::string> expand_globs(const std::vector<std::string>& patterns, const std::string& what);

class TokenOptions {
  // Tokens per window (the model's context).
  BATON_ARG(int64_t, context) = 1024;
  // Tokens are below this; 0: the largest token in the shards + 1 (one pass over them).
  BATON_ARG(int64_t, vocab_size) = 0;
  // Training windows start at a random offset below `context` drawn from (seed, epoch, index);
  // evaluation windows are fixed.
  BATON_ARG(bool, random_offsets) = true;
  BATON_ARG(uint64_t, seed) = 0;
};

// Windows of `context` tokens over token shards: example i is the i-th window of context + 1 tokens
// (the input and, shifted by one, its target), windows never crossing from one shard into the next.
// size() is the number of windows that cover the shards once, so an epoch reads the corpus once.
class TokenDataset : public Dataset {
 public:
  ~TokenDataset() override;
  // Throws std::runtime_error naming a bad shard or a shard with a token at or above vocab_size,
  // std::invalid_argument when no shard holds one window.
  static std::shared_ptr<TokenDataset> open(const std::vector<std::string>& files, const TokenOptions& options);

  int64_t size() const override;
  Batch get_batch(const at::Tensor& indices) const override { return get_epoch_batch(indices, 0); }
  Batch get_epoch_batch(const at::Tensor& indices, int64_t epoch) const override;
  std::vector<int64_t> input_shape() const override;
  int64_t tokens_per_example() const override;
  int64_t num_classes() const override;
  // Tokens in every shard.
  int64_t tokens() const;
  const std::vector<std::shared_ptr<TokenShard>>& shards() const;

 private:
  TokenDataset();

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
