// ChatDataset: JSON lines through chatml, llama3 and format-string templates, the loss on the answers
// only (train_on_prompt to count all), the end of text, overlong examples truncated or dropped and
// counted, packing (examples never split, positions restarting), the same windows on any number of
// threads, and bad lines named by file and line. The packed loss equal to the loss alone, and masked
// targets without gradient: tests/models/hf_test.cpp.
#include "baton/data/chat.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "common/byte_tokenizer.h"
#include "common/test_util.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using ::testing::HasSubstr;

constexpr int64_t kEos = 256, kImStart = 257, kImEnd = 258, kBegin = 259, kHeader = 260, kHeaderEnd = 261, kEot = 262;

// A byte-level tokenizer (a token a byte) with chatml's and Llama 3's special tokens.
TextTokenizer tokenizer(const testing::TempDir& dir) {
  nlohmann::json added = nlohmann::json::array();
  for (const auto& [id, text] : std::vector<std::pair<int64_t, std::string>>{{kEos, "<|endoftext|>"},
                                                                             {kImStart, "<|im_start|>"},
                                                                             {kImEnd, "<|im_end|>"},
                                                                             {kBegin, "<|begin_of_text|>"},
                                                                             {kHeader, "<|start_header_id|>"},
                                                                             {kHeaderEnd, "<|end_header_id|>"},
                                                                             {kEot, "<|eot_id|>"}}) {
    added.push_back({{"id", id}, {"content", text}, {"special", true}});
  }
  std::ofstream(dir.file("tokenizer.json")) << testing::byte_tokenizer({}, {}, added).dump();
  return TextTokenizer::load(dir.file("tokenizer.json"));
}

std::string write_lines(const testing::TempDir& dir, const std::string& name, const std::vector<std::string>& lines) {
  std::ofstream out(dir.file(name));
  for (const auto& line : lines) out << line << "\n";
  return dir.file(name);
}

std::vector<int64_t> bytes(const std::string& text) { return {text.begin(), text.end()}; }

// Tokens and whether each is counted, built up piece by piece.
struct Expected {
  std::vector<int64_t> tokens;
  std::vector<bool> trained;
  Expected& add(const std::vector<int64_t>& ids, bool counted) {
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    trained.insert(trained.end(), ids.size(), counted);
    return *this;
  }
};

TEST(ChatDataset, ChatmlCountsTheAnswerItsEndOfTurnAndTheEndOfText) {
  testing::TempDir dir("chat");
  const auto file = write_lines(dir, "a.jsonl", {R"({"prompt": "hi", "completion": "yo"})"});
  const auto data = ChatDataset::open({file}, tokenizer(dir), ChatOptions().context(64));
  Expected e;
  e.add({kImStart}, false).add(bytes("user\nhi"), false).add({kImEnd}, false).add(bytes("\n"), false);
  e.add({kImStart}, false).add(bytes("assistant\n"), false).add(bytes("yo"), true).add({kImEnd, kEos}, true);
  EXPECT_EQ(data->example_tokens(0), e.tokens);
  EXPECT_EQ(data->example_trained(0), e.trained);
  EXPECT_EQ(data->size(), 1);
  EXPECT_EQ(data->stats().trained_tokens, 4);  // y, o, <|im_end|>, <|endoftext|>

  // The window: each token's target is the next where that one is counted; the rest -100.
  const Batch b = data->get_batch(torch::tensor({0}));
  ASSERT_EQ(b.input.sizes(), (std::vector<int64_t>{1, 64}));
  EXPECT_FALSE(b.positions.defined());
  const int64_t n = static_cast<int64_t>(e.tokens.size());
  for (int64_t i = 0; i < 64; ++i) {
    const int64_t expected_target = i + 1 < n && e.trained[i + 1] ? e.tokens[i + 1] : kIgnoredTarget;
    EXPECT_EQ(b.target[0][i].item<int64_t>(), expected_target) << i;
    EXPECT_EQ(b.input[0][i].item<int64_t>(), i < n ? e.tokens[i] : kEos) << i;  // padded with the end of text
  }
}

TEST(ChatDataset, Llama3ConversationsCountEveryAssistantTurn) {
  testing::TempDir dir("chat");
  const auto file = write_lines(
      dir, "a.jsonl",
      {R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "a"},)"
       R"( {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]})"});
  const auto data = ChatDataset::open({file}, tokenizer(dir), ChatOptions().context(128).chat_template("llama3"));
  Expected e;
  e.add({kBegin}, false);
  for (const auto& [role, content] : std::vector<std::pair<std::string, std::string>>{
           {"system", "S"}, {"user", "a"}, {"assistant", "b"}, {"user", "c"}, {"assistant", "d"}}) {
    e.add({kHeader}, false).add(bytes(role), false).add({kHeaderEnd}, false).add(bytes("\n\n"), false);
    e.add(bytes(content), role == "assistant").add({kEot}, role == "assistant");
  }
  e.add({kEos}, true);
  EXPECT_EQ(data->example_tokens(0), e.tokens);
  EXPECT_EQ(data->example_trained(0), e.trained);

  // train_on_prompt: every target counted but the first token's (none points at it).
  const auto all = ChatDataset::open({file}, tokenizer(dir),
                                     ChatOptions().context(128).chat_template("llama3").train_on_prompt(true));
  EXPECT_EQ(all->stats().trained_tokens, static_cast<int64_t>(e.tokens.size()) - 1);
  const Batch b = all->get_batch(torch::tensor({0}));
  EXPECT_EQ(b.target.ne(kIgnoredTarget).sum().item<int64_t>(), static_cast<int64_t>(e.tokens.size()) - 1);
}

TEST(ChatDataset, AFormatStringTakesTheRecordsFieldsAndTheAnswerFromCompletion) {
  testing::TempDir dir("chat");
  const auto file =
      write_lines(dir, "a.jsonl",
                  {R"({"prompt": "p", "input": 7, "completion": "c"})", "", R"({"prompt": "p", "completion": "c"})"});
  const std::string format = "Q{{{prompt}}} {input}\nA:{completion}.";
  const auto tok = tokenizer(dir);
  const auto one = ChatDataset::open({dir.file("a.jsonl")}, tok,
                                     ChatOptions().context(64).chat_template("Q: {prompt}\nA:{completion}"));
  ASSERT_EQ(one->examples(), 2);
  Expected e;
  e.add(bytes("Q: p\nA:"), false).add(bytes("c"), true).add({kEos}, true);
  EXPECT_EQ(one->example_tokens(0), e.tokens);
  EXPECT_EQ(one->example_trained(0), e.trained);
  // The second record lacks "input": named by file and line (the blank line counted).
  EXPECT_THAT(error_of([&] { ChatDataset::open({file}, tok, ChatOptions().chat_template(format)); }),
              HasSubstr(file + ":3: no \"input\", which the template's {input} needs"));
  write_lines(dir, "b.jsonl", {R"({"prompt": "p", "input": 7, "completion": "c"})"});
  const auto braces = ChatDataset::open({dir.file("b.jsonl")}, tok, ChatOptions().chat_template(format));
  Expected f;
  f.add(bytes("Q{p} 7\nA:"), false).add(bytes("c."), true).add({kEos}, true);
  EXPECT_EQ(braces->example_tokens(0), f.tokens);
  EXPECT_EQ(braces->example_trained(0), f.trained);
}

TEST(ChatDataset, OverlongExamplesAreTruncatedOrDroppedAndCounted) {
  testing::TempDir dir("chat");
  const auto file = write_lines(dir, "a.jsonl",
                                {R"({"prompt": "p", "completion": "short"})",
                                 R"({"prompt": "p", "completion": "a rather longer answer than fits"})",
                                 R"({"prompt": "a prompt longer than the whole window", "completion": "x"})"});
  const auto tok = tokenizer(dir);
  const auto t = ChatDataset::open({file}, tok, ChatOptions().context(24).chat_template("{prompt}|{completion}"));
  EXPECT_EQ(t->stats().records, 3);
  EXPECT_EQ(t->stats().truncated, 2);
  EXPECT_EQ(t->stats().dropped, 1);  // truncated to its prompt: nothing to train on
  EXPECT_EQ(t->examples(), 2);
  EXPECT_EQ(t->example_tokens(1).size(), 24U);
  const auto d =
      ChatDataset::open({file}, tok, ChatOptions().context(24).chat_template("{prompt}|{completion}").overlong("drop"));
  EXPECT_EQ(d->stats().truncated, 0);
  EXPECT_EQ(d->stats().dropped, 2);
  EXPECT_EQ(d->examples(), 1);
}

TEST(ChatDataset, PackingFillsWindowsInOrderWithPositionsRestarting) {
  testing::TempDir dir("chat");
  std::vector<std::string> lines;
  for (int i = 0; i < 40; ++i) {
    lines.push_back(
        nlohmann::json{{"prompt", std::string(1 + i % 5, 'q')}, {"completion", std::string(1 + i % 7, 'a')}}.dump());
  }
  const auto file = write_lines(dir, "a.jsonl", lines);
  const auto tok = tokenizer(dir);
  const ChatOptions o = ChatOptions().context(32).chat_template("{prompt}:{completion}").packing(true);
  const auto packed = ChatDataset::open({file}, tok, o);
  const auto alone = ChatDataset::open({file}, tok, ChatOptions(o).packing(false));
  EXPECT_EQ(alone->size(), 40);
  EXPECT_LT(packed->size(), 40 / 2);
  EXPECT_EQ(packed->stats().trained_tokens, alone->stats().trained_tokens);
  const Batch b = packed->get_batch(torch::arange(packed->size()));
  ASSERT_TRUE(b.positions.defined());
  // Reading the windows' sequences back (a position 0 starts one) gives every example once, in order.
  int64_t example = 0, counted = 0;
  for (int64_t w = 0; w < packed->size(); ++w) {
    int64_t used = 0;
    for (int64_t i = 0; i < 32;) {
      int64_t length = 1;
      while (i + length < 32 && b.positions[w][i + length].item<int64_t>() != 0) ++length;
      if (example < 40 && used == i) {
        const std::vector<int64_t> tokens = packed->example_tokens(example);
        if (static_cast<int64_t>(tokens.size()) == length &&
            torch::equal(b.input[w].narrow(0, i, length), torch::tensor(tokens))) {
          ++example;
          used += length;
        }
      }
      for (int64_t j = 0; j < length; ++j) EXPECT_EQ(b.positions[w][i + j].item<int64_t>(), j);
      i += length;
    }
    EXPECT_GT(used, 0);
    counted += b.target[w].ne(kIgnoredTarget).sum().item<int64_t>();
  }
  EXPECT_EQ(example, 40);
  EXPECT_EQ(counted, packed->stats().trained_tokens);
  // Tokenized on one thread or several: the same windows.
  const auto one_thread = ChatDataset::open({file}, tok, ChatOptions(o).threads(1));
  const Batch c = one_thread->get_batch(torch::arange(one_thread->size()));
  EXPECT_TRUE(torch::equal(b.input, c.input) && torch::equal(b.target, c.target) &&
              torch::equal(b.positions, c.positions));
}

TEST(ChatDataset, BadLinesAreNamedByFileAndLine) {
  testing::TempDir dir("chat");
  const auto tok = tokenizer(dir);
  auto error = [&](const std::vector<std::string>& lines, const ChatOptions& o = ChatOptions()) {
    const auto file = write_lines(dir, "bad.jsonl", lines);
    return error_of([&] { ChatDataset::open({file}, tok, o); });
  };
  const std::string ok = R"({"prompt": "p", "completion": "c"})";
  EXPECT_THAT(error({ok, "{not json"}), HasSubstr("bad.jsonl:2: not JSON (column"));
  EXPECT_THAT(error({ok, ok, R"({"prompt": "p"})"}), HasSubstr("bad.jsonl:3: no \"completion\""));
  EXPECT_THAT(error({R"([1, 2])"}), HasSubstr("bad.jsonl:1: expected a JSON object"));
  EXPECT_THAT(error({R"({"messages": [{"role": "user"}]})"}),
              HasSubstr("bad.jsonl:1: messages[0]: expected {\"role\": \"user\", \"content\": \"...\"}"));
  EXPECT_THAT(
      error({R"({"messages": [{"role": "user", "content": "x"}]})"}, ChatOptions().chat_template("{completion}")),
      HasSubstr("bad.jsonl:1: a {\"messages\": [...]} record needs template chatml or llama3"));
  EXPECT_THAT(error({ok}, ChatOptions().chat_template("Q: {prompt}")), HasSubstr("has no {completion}"));
  EXPECT_THAT(error({ok}, ChatOptions().chat_template("Q: {prompt")), HasSubstr("opens no {field}"));
  EXPECT_THAT(error({ok}, ChatOptions().overlong("cut")), HasSubstr("overlong: expected truncate or drop"));
  EXPECT_THAT(error({R"({"prompt": "a very long prompt indeed", "completion": "c"})"},
                    ChatOptions().context(8).chat_template("{prompt}{completion}")),
              HasSubstr("no example to train on (1 records, 1 dropped"));
  EXPECT_THAT(error_of([&] { ChatDataset::open({dir.file("missing.jsonl")}, tok, ChatOptions()); }),
              HasSubstr("missing.jsonl"));
}

}  // namespace
}  // namespace baton
