// Byte-level BPE from tokenizer.json (src/data/hf_tokenizer.cpp) on a tokenizer written by hand:
// bytes as GPT-2's characters, merges by rank, GPT-2's pre-tokenizer, added tokens matched first,
// decode(encode(x)) == x, and what it cannot read named. tests/llm/ compares with `tokenizers`.
#include "baton/data/hf_tokenizer.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/byte_tokenizer.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

// Every byte's character as a token, then merges.
nlohmann::json tokenizer_json() {
  return testing::byte_tokenizer({{"lo", 256}, {"low", 257}, {"\xC4\xA0low", 258}, {"er", 259}},  // "Ġlow": " low"
                                 {"l o", "lo w", "\xC4\xA0 low", "e r"},
                                 {{{"id", 260}, {"content", "<|end|>"}, {"special", true}}});
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
