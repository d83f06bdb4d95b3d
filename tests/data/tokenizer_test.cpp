// The tokenizer (src/data/tokenizer.cpp): SentencePiece models trained, encode and decode.
#include "baton/data/tokens.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/core/options.h"
#include "baton/data/tokenizer.h"
#include "common/test_util.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using ::testing::HasSubstr;
using testing::read_file;
using ::testing::StartsWith;
using testing::write_file;

// A small corpus: words from a short list, in lines, so that a 300-token BPE has merges to learn.
std::string corpus(int lines, unsigned seed) {
  const std::vector<std::string> words = {"the",   "quick", "brown", "fox",  "jumps", "over", "lazy",
                                          "dog",   "and",   "then",  "runs", "away",  "from", "a",
                                          "river", "under", "trees", "at",   "night", "still"};
  std::mt19937 rng(seed);
  std::string text;
  for (int l = 0; l < lines; ++l) {
    const int n = 3 + static_cast<int>(rng() % 9);
    for (int w = 0; w < n; ++w) text += (w ? " " : "") + words[rng() % words.size()];
    text += l % 7 == 0 ? ".\n\n" : ".\n";
  }
  return text;
}

TEST(Tokenizer, TrainsEncodesDecodesAndWritesShardsWithLineBreaksAndDocumentEnds) {
  const testing::TempDir tmp("tokenizer");
  const fs::path dir = tmp.path();
  const std::string text = corpus(3000, 1);
  write_file(dir / "a.txt", text);
  write_file(dir / "b.txt", corpus(500, 2));
  const Tokenizer t = Tokenizer::train({(dir / "a.txt").string()}, (dir / "tok").string(), {.vocab_size = 400});
  EXPECT_EQ(t.vocab_size(), 400);
  ASSERT_TRUE(fs::is_regular_file(dir / "tok.model"));
  EXPECT_GE(t.newline_id(), 0);
  EXPECT_GE(t.end_of_text_id(), 0);
  const std::string line = "the lazy fox runs  under trees, 42 times!";
  const std::vector<int> ids = t.encode(line);
  EXPECT_LT(ids.size(), line.size() / 2) << "a trained BPE merges common words";
  EXPECT_EQ(t.decode(ids), line);  // spaces kept, unseen characters as bytes

  const Tokenizer loaded = Tokenizer::load((dir / "tok.model").string());
  EXPECT_EQ(loaded.encode(line), ids);
  EXPECT_EQ(loaded.newline_id(), t.newline_id());

  const TokenizeSummary s =
      tokenize_files({(dir / "a.txt").string(), (dir / "b.txt").string()}, loaded,
                     {.out = (dir / "shards").string(), .val_fraction = 0.1, .shard_tokens = 4096});
  EXPECT_GT(s.train_tokens, 4096);  // more than one training shard
  EXPECT_GT(s.val_tokens, 0);
  const auto train = expand_globs({(dir / "shards/train_*.bin").string()}, "train");
  ASSERT_GE(train.size(), 2u);
  EXPECT_EQ(fs::path(train[0]).filename(), "train_000000.bin");
  int64_t counted = 0;
  std::vector<int> all;
  for (const auto& f : train) {
    const TokenShard shard(f);
    counted += shard.size();
    std::vector<uint32_t> tokens(static_cast<std::size_t>(shard.size()));
    shard.read(0, shard.size(), tokens.data());
    all.insert(all.end(), tokens.begin(), tokens.end());
  }
  EXPECT_EQ(counted, s.train_tokens);
  // The training part of a.txt decodes to a.txt's beginning, line breaks included.
  const auto eot = std::find(all.begin(), all.end(), loaded.end_of_text_id());
  const std::string decoded = loaded.decode(std::vector<int>(all.begin(), all.begin() + 200));
  EXPECT_EQ(decoded, text.substr(0, decoded.size()));
  EXPECT_NE(decoded.find('\n'), std::string::npos);
  EXPECT_TRUE(eot == all.end() || eot - all.begin() > 200);
}

TEST(Tokenizer, TextThatIsNotUtf8IsRefusedNamingTheLineNotReplacedSilently) {
  const testing::TempDir tmp("tokenizer_utf8");
  const fs::path dir = tmp.path();
  write_file(dir / "a.txt", corpus(3000, 1));
  write_file(dir / "latin1.txt", "caf\xc3\xa9 ok\nna\xefve\n");  // line 2: Latin-1's i with diaeresis
  const Tokenizer t = Tokenizer::train({(dir / "a.txt").string()}, (dir / "tok").string(), {.vocab_size = 400});
  const std::string expected = (dir / "latin1.txt").string() + ":2: byte 11 (0xef) is not UTF-8";
  EXPECT_THAT(error_of([&] { tokenize_files({(dir / "latin1.txt").string()}, t, {.out = (dir / "s").string()}); }),
              HasSubstr(expected));
  EXPECT_THAT(
      error_of([&] { Tokenizer::train({(dir / "latin1.txt").string()}, (dir / "t2").string(), {.vocab_size = 400}); }),
      HasSubstr(expected));
}

TEST(Tokenizer, ALongLineIsTrainedOnAndTokenizedInPiecesThatDecodeBackToIt) {
  const testing::TempDir tmp("tokenizer_long");
  const fs::path dir = tmp.path();
  std::string line = corpus(3000, 1);  // one line of some 80 KiB: SentencePiece skips lines over 16 KiB
  std::replace(line.begin(), line.end(), '\n', ' ');
  ASSERT_GT(line.size(), 3u * 16384);
  write_file(dir / "one.txt", line);
  const Tokenizer t = Tokenizer::train({(dir / "one.txt").string()}, (dir / "tok").string(), {.vocab_size = 400});
  EXPECT_EQ(t.vocab_size(), 400);  // trained on it: no "too few sentences"
  std::string huge;                // several MiB in one line: encoded in pieces, memory bounded
  while (huge.size() < (6u << 20)) huge += line;
  write_file(dir / "huge.txt", huge);
  const TokenizeSummary s =
      tokenize_files({(dir / "huge.txt").string()}, t, {.out = (dir / "s").string(), .val_fraction = 0});
  std::vector<int> all;
  for (const auto& f : s.shards) {
    const TokenShard shard(f);
    std::vector<uint32_t> tokens(static_cast<std::size_t>(shard.size()));
    shard.read(0, shard.size(), tokens.data());
    all.insert(all.end(), tokens.begin(), tokens.end());
  }
  if (!all.empty() && all.back() == t.end_of_text_id()) all.pop_back();
  EXPECT_EQ(t.decode(all), huge);
}

TEST(Tokenizer, AFileThatIsNotAModelAndTooFewTextsAreNamed) {
  const testing::TempDir tmp("tokenizer_bad");
  const fs::path dir = tmp.path();
  write_file(dir / "x.model", "not a model at all");
  EXPECT_THAT(error_of([&] { Tokenizer::load((dir / "x.model").string()); }),
              StartsWith((dir / "x.model").string() + ": not a SentencePiece model"));
  EXPECT_THAT(error_of([&] { Tokenizer::load((dir / "none.model").string()); }), HasSubstr("none.model"));
  EXPECT_THAT(error_of([&] { Tokenizer::train({(dir / "none.txt").string()}, (dir / "t").string(), {}); }),
              HasSubstr("none.txt"));
  EXPECT_THAT(
      error_of([&] { Tokenizer::train({(dir / "x.model").string()}, (dir / "t").string(), {.vocab_size = 70000}); }),
      HasSubstr("vocab size 70000"));
  write_file(dir / "tiny.txt", "a b c\n");
  EXPECT_THAT(
      error_of([&] { Tokenizer::train({(dir / "tiny.txt").string()}, (dir / "t").string(), {.vocab_size = 5000}); }),
      HasSubstr("training the tokenizer failed"));
  EXPECT_FALSE(fs::exists(dir / "t.model"));
}

}  // namespace
}  // namespace baton
