// TextTokenizer: a model folder's tokenizer of either kind, its end of text, the parts a text may be
// encoded in; tokenize_files with a tokenizer.json (whole files' ids, uint32 shards for a large
// vocabulary, the same shards on one thread or several). The ids against Hugging Face's own
// tokenizers: tests/llm (label llm).
#include "baton/data/text_tokenizer.h"

#include <filesystem>
#include <fstream>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "baton/data/tokenizer.h"
#include "baton/data/tokens.h"
#include "common/byte_tokenizer.h"
#include "common/test_util.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using ::testing::HasSubstr;

// A folder with a byte-level tokenizer.json: merges for "th", "the", " the", "he"; <|endoftext|> at `eot`.
fs::path tokenizer_folder(const testing::TempDir& dir, int64_t eot = 260) {
  const fs::path folder = fs::path(dir.path()) / "model";
  fs::create_directories(folder);
  const nlohmann::json json = testing::byte_tokenizer({{"th", 256}, {"the", 257}, {"\xC4\xA0the", 258}, {"he", 259}},
                                                      {"t h", "th e", "\xC4\xA0 the", "h e"},
                                                      {{{"id", eot}, {"content", "<|endoftext|>"}, {"special", true}}});
  std::ofstream(folder / "tokenizer.json") << json.dump();
  return folder;
}

// Lines of words, some with trailing spaces, blank lines and runs of spaces: cuts must avoid them.
std::string corpus(std::size_t bytes) {
  std::mt19937 rng(3);
  const std::vector<std::string> words = {"the", "then", "other", "bathe", "x1", "2024", "t", "héllo", "!?"};
  std::string text;
  while (text.size() < bytes) {
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) text += (i ? (rng() % 9 == 0 ? "   " : " ") : "") + words[rng() % words.size()];
    text += rng() % 7 == 0 ? " \n" : (rng() % 11 == 0 ? "\n\n" : "\n");
  }
  return text;
}

TEST(TextTokenizer, AFoldersTokenizerJsonEncodesDecodesAndFindsItsEndOfText) {
  const testing::TempDir dir("text_tokenizer");
  const fs::path folder = tokenizer_folder(dir);
  const TextTokenizer t = TextTokenizer::load(folder.string());
  EXPECT_EQ(t.file(), (folder / "tokenizer.json").string());
  EXPECT_EQ(t.sentencepiece(), nullptr);
  EXPECT_EQ(t.vocab_size(), 261);
  EXPECT_EQ(t.encode("the the"), (std::vector<int64_t>{257, 258}));
  EXPECT_EQ(t.decode({257, 258, 260}), "the the<|endoftext|>");
  EXPECT_EQ(t.end_of_text_id(), 260) << "by its name";
  std::ofstream(folder / "config.json") << R"({"eos_token_id": 99999})";
  EXPECT_EQ(TextTokenizer::load(folder.string()).end_of_text_id(), 260) << "an id the tokenizer lacks: not it";
  std::ofstream(folder / "config.json") << R"({"eos_token_id": [7, 8]})";
  EXPECT_EQ(TextTokenizer::load(folder.string()).end_of_text_id(), 7) << "config.json's first";
  std::ofstream(folder / "tokenizer_config.json") << R"({"eos_token": {"content": "<|endoftext|>"}})";
  EXPECT_EQ(TextTokenizer::load((folder / "tokenizer.json").string()).end_of_text_id(), 260)
      << "tokenizer_config.json's before config.json's";
}

// A prompt's special tokens: the post-processor's template (Llama 3's kind), then
// tokenizer_config.json's add_bos_token / add_eos_token where it says them.
TEST(TextTokenizer, APromptGetsTheSpecialTokensOfTheTemplateOrOfTheConfig) {
  const testing::TempDir dir("text_tokenizer_template");
  const fs::path folder = fs::path(dir.path()) / "model";
  fs::create_directories(folder);
  nlohmann::json json = testing::byte_tokenizer({}, {},
                                                {{{"id", 256}, {"content", "<|begin_of_text|>"}, {"special", true}},
                                                 {{"id", 257}, {"content", "<|end_of_text|>"}, {"special", true}}});
  auto write = [&](const nlohmann::json& post_processor) {
    json["post_processor"] = post_processor;
    std::ofstream(folder / "tokenizer.json") << json.dump();
    return TextTokenizer::load(folder.string());
  };
  const nlohmann::json bos = {{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}};
  const nlohmann::json text = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  const nlohmann::json specials = {
      {"<|begin_of_text|>", {{"id", "<|begin_of_text|>"}, {"ids", {256}}, {"tokens", {"<|begin_of_text|>"}}}}};
  const nlohmann::json llama3 = {{"type", "Sequence"},
                                 {"processors",
                                  {{{"type", "ByteLevel"}, {"trim_offsets", false}},
                                   {{"type", "TemplateProcessing"},
                                    {"single", {bos, text}},
                                    {"pair", {bos, text}},
                                    {"special_tokens", specials}}}}};
  EXPECT_EQ(write(llama3).encode_with_special_tokens("hi"), (std::vector<int64_t>{256, 'h', 'i'}));
  EXPECT_EQ(write(llama3).encode("hi"), (std::vector<int64_t>{'h', 'i'})) << "encode adds nothing";
  EXPECT_EQ(write({{"type", "ByteLevel"}}).encode_with_special_tokens("hi"), (std::vector<int64_t>{'h', 'i'}));
  EXPECT_EQ(
      write({{"type", "RobertaProcessing"}, {"cls", {"<|begin_of_text|>", 256}}, {"sep", {"<|end_of_text|>", 257}}})
          .encode_with_special_tokens("hi"),
      (std::vector<int64_t>{256, 'h', 'i', 257}));
  EXPECT_THAT(error_of([&] {
                write({{"type", "Frobnicate"}});
              }),
              HasSubstr("tokenizer.json: post_processor: 'Frobnicate' is not implemented"));

  // tokenizer_config.json's flags decide where they are given (transformers' LlamaTokenizerFast).
  write(llama3);
  std::ofstream(folder / "tokenizer_config.json")
      << R"({"add_bos_token": false, "add_eos_token": true, "eos_token": "<|end_of_text|>"})";
  EXPECT_EQ(TextTokenizer::load(folder.string()).encode_with_special_tokens("hi"),
            (std::vector<int64_t>{'h', 'i', 257}));
  std::ofstream(folder / "tokenizer_config.json") << R"({"add_bos_token": true, "bos_token": "<s>"})";
  EXPECT_THAT(error_of([&] { TextTokenizer::load(folder.string()); }),
              HasSubstr("tokenizer_config.json: add_bos_token is true, and its bos_token '<s>' is not one of the "
                        "tokenizer's tokens"));
}

// SentencePiece's: its <s> before a prompt (transformers' LlamaTokenizer: add_bos_token true), unless
// tokenizer_config.json says not.
TEST(TextTokenizer, ASentencePiecePromptStartsWithItsBosUnlessTheConfigSaysNot) {
  const testing::TempDir dir("text_tokenizer_spm");
  const fs::path folder = fs::path(dir.path());
  std::ofstream(folder / "text.txt") << corpus(40000);
  const Tokenizer trained =
      Tokenizer::train({(folder / "text.txt").string()}, (folder / "tokenizer").string(), {.vocab_size = 300});
  ASSERT_GE(trained.begin_of_text_id(), 0);
  EXPECT_EQ(trained.piece_id("<s>"), trained.begin_of_text_id());
  EXPECT_EQ(trained.piece_id("no such piece"), -1);
  const TextTokenizer t = TextTokenizer::load((folder / "tokenizer.model").string());
  std::vector<int64_t> expected = {trained.begin_of_text_id()};
  for (const int id : trained.encode("the other")) expected.push_back(id);
  EXPECT_EQ(t.encode_with_special_tokens("the other"), expected);
  std::ofstream(folder / "tokenizer_config.json") << R"({"add_bos_token": false})";
  EXPECT_EQ(TextTokenizer::load((folder / "tokenizer.model").string()).encode_with_special_tokens("the other"),
            t.encode("the other"));
}

TEST(TextTokenizer, EncodingTheTextsPartsGivesTheWholesIds) {
  const testing::TempDir dir("text_tokenizer_parts");
  const TextTokenizer t = TextTokenizer::load(tokenizer_folder(dir).string());
  const std::string text = corpus(200'000);
  const std::vector<std::string_view> parts = t.parts(text, 10'000);
  ASSERT_GT(parts.size(), 15U);
  std::string joined;
  std::vector<int64_t> ids;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    if (i + 1 < parts.size()) {
      EXPECT_GE(part.size(), 10'000U);
      EXPECT_EQ(part.back(), '\n');           // after a line break ...
      EXPECT_NE(part[part.size() - 2], ' ');  // ... not after a space (a whitespace run would split)
    }
    joined += part;
    const auto some = t.encode(part);
    ids.insert(ids.end(), some.begin(), some.end());
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(ids, t.encode(text));
  EXPECT_EQ(t.parts(text, 0).size(), 1U);
  EXPECT_EQ(t.parts("a b c", 1).size(), 1U) << "no line break: one part";
}

TEST(TextTokenizer, WhatIsNotATokenizerIsNamed) {
  const testing::TempDir dir("text_tokenizer_bad");
  EXPECT_THAT(error_of([&] { TextTokenizer::load(dir.file("none")); }), HasSubstr("none: no such file or folder"));
  EXPECT_THAT(error_of([&] { TextTokenizer::load(dir.path()); }),
              HasSubstr("no tokenizer.json or tokenizer.model beside the model in this folder"));
  std::ofstream(dir.file("tokenizer.json")) << "{not json";
  EXPECT_THAT(error_of([&] { TextTokenizer::load(dir.path()); }), HasSubstr("tokenizer.json"));
  std::ofstream(dir.file("x.model")) << "not a model";
  EXPECT_THAT(error_of([&] { TextTokenizer::load(dir.file("x.model")); }), HasSubstr("x.model"));
}

// A tokenizer.json's corpus: each file's whole ids then <|endoftext|>, on one thread or three; a
// vocabulary over 65,536 tokens writes uint32 shards.
TEST(TextTokenizer, TokenizeFilesWritesTheWholeFilesIdsInUint16OrUint32Shards) {
  const testing::TempDir dir("text_tokenizer_shards");
  const std::string text = corpus(2'500'000);  // three parts of 1 MiB
  testing::write_file(dir.file("a.txt"), text);
  for (const int64_t eot : {int64_t{260}, int64_t{70000}}) {
    const TextTokenizer t = TextTokenizer::load(tokenizer_folder(dir, eot).string());
    std::vector<int64_t> expected = t.encode(text);
    expected.push_back(eot);
    std::vector<std::vector<uint32_t>> shards;
    for (const int threads : {1, 3}) {
      const std::string out = dir.file("out_" + std::to_string(eot) + "_" + std::to_string(threads));
      const TokenizeSummary s =
          tokenize_files({dir.file("a.txt")}, t, {.out = out, .val_fraction = 0, .threads = threads});
      EXPECT_EQ(s.token_bytes, eot > 65535 ? 4 : 2);
      ASSERT_EQ(s.shards.size(), 1U);
      const TokenShard shard(s.shards[0]);
      EXPECT_EQ(shard.token_bytes(), s.token_bytes);
      std::vector<uint32_t> tokens(static_cast<std::size_t>(shard.size()));
      shard.read(0, shard.size(), tokens.data());
      shards.push_back(tokens);
    }
    EXPECT_EQ(shards[0], shards[1]) << "one thread or three";
    EXPECT_EQ(std::vector<int64_t>(shards[0].begin(), shards[0].end()), expected);
  }
}

}  // namespace
}  // namespace baton
