// Byte-level BPE from tokenizer.json (src/data/hf_tokenizer.cpp) on a tokenizer written by hand:
// bytes as GPT-2's characters, merges by rank, GPT-2's pre-tokenizer, added tokens matched first,
// decode(encode(x)) == x, and what it cannot read named. tests/llm/ compares with `tokenizers`.
#include "baton/data/hf_tokenizer.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

// Every byte's character as a token (ids 0-255 in byte order, GPT-2's mapping), then merges.
nlohmann::json tokenizer_json() {
  nlohmann::json vocab = nlohmann::json::object();
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    const uint32_t cp = printable ? b : 256 + extra++;
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    vocab[s] = b;
  }
  vocab["lo"] = 256;
  vocab["low"] = 257;
  vocab["\xC4\xA0low"] = 258;  // "Ġlow": " low"
  vocab["er"] = 259;
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"l o", "lo w", "\xC4\xA0 low", "e r"}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"added_tokens", {{{"id", 260}, {"content", "<|end|>"}, {"special", true}}}}};
}

TEST(HfTokenizer, MergesByRankAfterGpt2sPreTokenizerAndMatchesAddedTokensFirst) {
  testing::TempDir dir("tok");
  std::ofstream(dir.file("tokenizer.json")) << tokenizer_json().dump();
  const HfTokenizer t = HfTokenizer::load(dir.str());
  EXPECT_EQ(t.vocab_size(), 261);
  // "lower low": "low" "er" | " low" (the space's piece); "<|end|>" whole; "lo" alone.
  EXPECT_EQ(t.encode("lower low<|end|>lo"), (std::vector<int64_t>{257, 259, 258, 260, 256}));
  EXPECT_EQ(t.encode("  x"), (std::vector<int64_t>{' ', ' ', 'x'})) << "\\s+(?!\\S) leaves the last space to x";
  for (const std::string text :
       {"lower low<|end|>lo", "tabs\t\tand\nnewlines  ", "ünïcödé 日本語 😀 123456", "<|end|><|end|>", ""}) {
    EXPECT_EQ(t.decode(t.encode(text)), text);
  }
  EXPECT_EQ(t.token_id("<|end|>"), 260);
  EXPECT_EQ(t.token_id("low"), 257);
  EXPECT_FALSE(t.token_id("nothing").has_value());
  EXPECT_EQ(t.decode({257, 261, -1, 259}), "lower") << "ids it lacks skipped";
  EXPECT_THAT(error_of([&] { t.encode("bad \xFF byte"); }), HasSubstr("not UTF-8 (at byte 4)"));
}

TEST(HfTokenizer, WhatItCannotReadIsNamed) {
  testing::TempDir dir("tok");
  const std::string file = dir.file("tokenizer.json");
  const auto refused = [&](const nlohmann::json& j) {
    std::ofstream(file) << j.dump();
    return error_of([&] { HfTokenizer::load(file); });
  };
  nlohmann::json j = tokenizer_json();
  j["model"]["type"] = "Unigram";
  EXPECT_THAT(refused(j), HasSubstr(file + ": model.type: 'Unigram' is not implemented (BPE)"));
  j = tokenizer_json();
  j["normalizer"] = {{"type", "NFKC"}};
  EXPECT_THAT(refused(j), HasSubstr("normalizer: NFKC is not implemented"));
  j = tokenizer_json();
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  EXPECT_THAT(refused(j), HasSubstr("pre_tokenizer: {\"type\":\"Metaspace\"} is not implemented"));
  j = tokenizer_json();
  j["model"]["merges"].push_back("x y");
  EXPECT_THAT(refused(j), HasSubstr("model.merges: 'x y' makes a token not in the vocab"));
  std::ofstream(file) << "{\"model\": ";
  EXPECT_THAT(error_of([&] { HfTokenizer::load(file); }), HasSubstr(file + ": not JSON"));
}

}  // namespace
}  // namespace baton
