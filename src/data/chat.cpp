#include "baton/data/chat.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/core/state.h"
#include "baton/io/file.h"
#include "baton/io/text.h"
#include "core/yaml_json.h"

namespace baton {

// A piece of a template's text: literal, or a record's field ({name}).
struct ChatFormatPart {
  bool field = false;
  std::string text;
};

namespace {

using json = nlohmann::json;
using FormatPart = ChatFormatPart;

constexpr std::uint64_t kMaxChatFileBytes = std::uint64_t{4} << 30;  // 4 GiB of JSON lines a file
constexpr std::size_t kMaxLineBytes = std::size_t{64} << 20;         // 64 MiB a record

// "### Q: {prompt}\n### A: {completion}" as its parts; {{ and }} are braces.
std::vector<FormatPart> parse_format(const std::string& format) {
  std::vector<FormatPart> parts;
  std::string literal;
  for (std::size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if ((c == '{' || c == '}') && i + 1 < format.size() && format[i + 1] == c) {
      literal += c;
      ++i;
    } else if (c == '{') {
      const std::size_t close = format.find('}', i);
      const std::string name = close == std::string::npos ? "" : format.substr(i + 1, close - i - 1);
      if (close == std::string::npos || name.empty() || name.find('{') != std::string::npos) {
        throw std::invalid_argument("template: the brace at character " + std::to_string(i + 1) +
                                    " opens no {field} (write {{ for a brace)");
      }
      if (!literal.empty()) parts.push_back({false, std::move(literal)});
      literal.clear();
      parts.push_back({true, name});
      i = close;
    } else if (c == '}') {
      throw std::invalid_argument("template: the brace at character " + std::to_string(i + 1) +
                                  " closes no {field} (write }} for a brace)");
    } else {
      literal += c;
    }
  }
  if (!literal.empty()) parts.push_back({false, std::move(literal)});
  return parts;
}

bool is_named_template(const std::string& t) { return t == "chatml" || t == "llama3"; }

// A stretch of an example's text, and whether the loss counts its tokens.
struct Segment {
  std::string text;
  bool trained = false;
};

struct Message {
  std::string role, content;
};

// One line's example, or why it is not one (the caller adds FILE:LINE).
struct Parsed {
  std::vector<int32_t> tokens;
  std::vector<uint8_t> trained;
  std::string error;
};

std::string json_reason(const std::string& what) {
  // nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 3: ..." as "column 3: ..."
  const std::size_t at = what.find("column ");
  return at == std::string::npos ? what : what.substr(at);
}

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The conversation a record holds: its messages, or its prompt and completion as a user's and an
// assistant's (after its system, when it has one).
std::vector<Message> conversation(const json& record) {
  std::vector<Message> out;
  if (record.contains("messages")) {
    const json& messages = record["messages"];
    if (!messages.is_array() || messages.empty()) {
      throw std::invalid_argument("\"messages\" must be a list of {\"role\": ..., \"content\": ...}");
    }
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const json& m = messages[i];
      const std::string where = "messages[" + std::to_string(i) + "]";
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
          !m["content"].is_string()) {
        throw std::invalid_argument(where + ": expected {\"role\": \"user\", \"content\": \"...\"} (strings)");
      }
      out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
    return out;
  }
  for (const char* key : {"prompt", "completion"}) {
    if (!record.contains(key)) {
      throw std::invalid_argument(std::string("no \"") + key +
                                  "\": a record is {\"prompt\": ..., \"completion\": ...} or {\"messages\": [...]}");
    }
    if (!record[key].is_string()) throw std::invalid_argument(std::string("\"") + key + "\" must be a string");
  }
  if (record.contains("system")) {
    if (!record["system"].is_string()) throw std::invalid_argument("\"system\" must be a string");
    out.push_back({"system", record["system"].get<std::string>()});
  }
  out.push_back({"user", record["prompt"].get<std::string>()});
  out.push_back({"assistant", record["completion"].get<std::string>()});
  return out;
}

// The segments of a conversation in chatml or llama3: every assistant message's content and end
// of turn counted, headers and the other messages not.
std::vector<Segment> chat_segments(const std::vector<Message>& messages, const std::string& kind) {
  std::vector<Segment> out;
  const bool llama3 = kind == "llama3";
  if (llama3) out.push_back({"<|begin_of_text|>", false});
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Message& m = messages[i];
    const bool answer = m.role == "assistant";
    out.push_back(
        {llama3 ? "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" : "<|im_start|>" + m.role + "\n", false});
    out.push_back({m.content + (llama3 ? "<|eot_id|>" : "<|im_end|>"), answer});
    if (!llama3 && i + 1 < messages.size()) out.push_back({"\n", false});
  }
  return out;
}

// The segments of a record through a format string: up to {completion} the prompt, from it the answer.
std::vector<Segment> format_segments(const json& record, const std::vector<FormatPart>& format) {
  if (record.contains("messages")) {
    throw std::invalid_argument(
        "a {\"messages\": [...]} record needs template chatml or llama3; a format string takes a record's fields");
  }
  std::vector<Segment> out(2);
  bool answer = false;
  for (const FormatPart& part : format) {
    answer = answer || (part.field && part.text == "completion");
    if (!part.field) {
      out[answer].text += part.text;
      continue;
    }
    if (!record.contains(part.text) || record[part.text].is_null()) {
      throw std::invalid_argument("no \"" + part.text + "\", which the template's {" + part.text + "} needs");
    }
    out[answer].text += text_of(record[part.text]);
  }
  out[1].trained = true;
  return out;
}

}  // namespace

struct ChatDataset::Impl {
  Impl(ChatOptions o, TextTokenizer t) : options(std::move(o)), tokenizer(std::move(t)) {}
  ChatOptions options;
  TextTokenizer tokenizer;
  std::vector<ChatFormatPart> format;  // a format string's parts (empty for chatml, llama3)
  std::vector<int32_t> tokens;         // every kept example's, one after another
  std::vector<uint8_t> trained;        // of each token: counted by the loss
  std::vector<int64_t> offsets{0};     // example i: tokens [offsets[i], offsets[i + 1])
  std::vector<int64_t> windows{0};     // window w: examples [windows[w], windows[w + 1])
  ChatStats stats;
  int64_t pad = 0;

  Parsed parse(std::string_view line) const;
  void add(Parsed&& example);
  void read_file_lines(const std::string& file);
  void pack();
};

// One record's tokens: its segments encoded one after another (the prompt of a format string with
// the tokenizer's special tokens around a text: Llama's <|begin_of_text|>), the end of text after.
Parsed ChatDataset::Impl::parse(std::string_view line) const {
  Parsed p;
  try {
    json record;
    try {
      record = parse_json(std::string(line), "the record", DocumentLimits{.max_values = 1'000'000, .max_depth = 16});
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("not JSON (" + json_reason(e.what()) + ")");
    }
    if (!record.is_object()) throw std::invalid_argument("expected a JSON object, got " + one_line(record.dump(), 60));
    const std::vector<Segment> segments =
        format.empty() ? chat_segments(conversation(record), options.chat_template()) : format_segments(record, format);
    for (std::size_t i = 0; i < segments.size(); ++i) {
      const bool first_of_format = !format.empty() && i == 0;
      const std::vector<int64_t> ids =
          first_of_format ? tokenizer.encode_with_special_tokens(segments[i].text) : tokenizer.encode(segments[i].text);
      for (const int64_t id : ids) p.tokens.push_back(static_cast<int32_t>(id));
      p.trained.resize(p.tokens.size(), segments[i].trained || options.train_on_prompt() ? 1 : 0);
    }
    const int64_t eos = tokenizer.end_of_text_id();
    if (options.add_eos() && eos >= 0 && (p.tokens.empty() || p.tokens.back() != eos)) {
      p.tokens.push_back(static_cast<int32_t>(eos));
      p.trained.push_back(p.trained.empty() ? 1 : p.trained.back());
    }
  } catch (const std::invalid_argument& e) {
    p.error = e.what();
  }
  return p;
}

// Keeps an example (cut to `context`, or left out as `overlong` says), counting what it did.
void ChatDataset::Impl::add(Parsed&& example) {
  ++stats.records;
  const auto context = static_cast<std::size_t>(options.context());
  if (example.tokens.size() > context) {
    if (options.overlong() == "drop") {
      ++stats.dropped;
      return;
    }
    example.tokens.resize(context);
    example.trained.resize(context);
    ++stats.truncated;
  }
  // The targets counted: each token after the first whose own flag is set.
  const int64_t counted = std::count(example.trained.begin() + std::min<std::size_t>(1, example.trained.size()),
                                     example.trained.end(), uint8_t{1});
  if (counted == 0) {
    ++stats.dropped;
    return;
  }
  stats.tokens += static_cast<int64_t>(example.tokens.size());
  stats.trained_tokens += counted;
  tokens.insert(tokens.end(), example.tokens.begin(), example.tokens.end());
  trained.insert(trained.end(), example.trained.begin(), example.trained.end());
  offsets.push_back(static_cast<int64_t>(tokens.size()));
}

void ChatDataset::Impl::read_file_lines(const std::string& file) {
  const std::string text = read_file(file, {.what = "the chat data", .max_bytes = kMaxChatFileBytes});
  std::vector<std::pair<int64_t, std::string_view>> lines;  // line number, text
  int64_t number = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + at, end - at);
    ++number;
    at = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (line.size() > kMaxLineBytes) {
      throw std::invalid_argument(file + ":" + std::to_string(number) + ": a record of " + human_bytes(line.size()) +
                                  ", more than " + human_bytes(kMaxLineBytes));
    }
    lines.emplace_back(number, line);
  }
  // Tokenized on threads, kept in the files' order.
  std::vector<Parsed> parsed(lines.size());
  const int threads = static_cast<int>(std::clamp<std::size_t>(
      options.threads() > 0 ? options.threads() : std::max(1u, std::thread::hardware_concurrency()), 1,
      std::max<std::size_t>(1, lines.size() / 16)));
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (std::size_t i = t; i < lines.size(); i += threads) parsed[i] = parse(lines[i].second);
    });
  }
  for (auto& thread : pool) thread.join();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!parsed[i].error.empty()) {
      throw std::invalid_argument(file + ":" + std::to_string(lines[i].first) + ": " + parsed[i].error);
    }
    add(std::move(parsed[i]));
  }
}

// Windows of examples: one each, or (packing) as many as fit, in order.
void ChatDataset::Impl::pack() {
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  int64_t used = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t length = offsets[i + 1] - offsets[i];
    if (i > 0 && (!options.packing() || used + length > options.context())) {
      windows.push_back(i);
      used = 0;
    }
    used += length;
  }
  if (n > 0) windows.push_back(n);
  stats.windows = static_cast<int64_t>(windows.size()) - 1;
}

ChatDataset::ChatDataset() : impl_(nullptr) {}
ChatDataset::~ChatDataset() = default;

void ChatDataset::check_template(const std::string& chat_template) {
  if (is_named_template(chat_template)) return;
  const std::vector<FormatPart> parts = parse_format(chat_template);
  if (std::none_of(parts.begin(), parts.end(), [](const FormatPart& p) { return p.field && p.text == "completion"; })) {
    throw std::invalid_argument("template: '" + one_line(chat_template, 80) +
                                "' is not chatml or llama3, and as a format string it has no {completion} (where "
                                "the answer starts)");
  }
}

std::shared_ptr<ChatDataset> ChatDataset::open(const std::vector<std::string>& files, const TextTokenizer& tokenizer,
                                               const ChatOptions& options) {
  check_template(options.chat_template());
  if (options.overlong() != "truncate" && options.overlong() != "drop") {
    throw std::invalid_argument("overlong: expected truncate or drop, got '" + one_line(options.overlong(), 40) + "'");
  }
  if (options.context() < 2) throw std::invalid_argument("context: expected 2 tokens or more");
  std::shared_ptr<ChatDataset> data(new ChatDataset());
  data->impl_ = std::make_unique<Impl>(options, tokenizer);
  Impl& impl = *data->impl_;
  if (!is_named_template(options.chat_template())) impl.format = parse_format(options.chat_template());
  impl.pad = std::max<int64_t>(0, tokenizer.end_of_text_id());
  for (const std::string& file : files) impl.read_file_lines(file);
  impl.pack();
  if (impl.stats.windows == 0) {
    throw std::invalid_argument((files.empty() ? std::string("no files") : files.front()) +
                                ": no example to train on (" + std::to_string(impl.stats.records) + " records, " +
                                std::to_string(impl.stats.dropped) +
                                " dropped: longer than context, or without an answer's token)");
  }
  return data;
}

int64_t ChatDataset::size() const { return impl_->stats.windows; }

Batch ChatDataset::get_batch(const at::Tensor& indices) const {
  const Impl& impl = *impl_;
  const at::Tensor order = indices.to(torch::kLong).contiguous();
  const int64_t n = order.numel(), t = impl.options.context();
  at::Tensor input = torch::full({n, t}, impl.pad, torch::kLong);
  at::Tensor target = torch::full({n, t}, kIgnoredTarget, torch::kLong);
  at::Tensor positions = impl.options.packing() ? torch::empty({n, t}, torch::kLong) : at::Tensor();
  const int64_t* rows = order.data_ptr<int64_t>();
  for (int64_t r = 0; r < n; ++r) {
    const int64_t w = rows[r];
    if (w < 0 || w >= size())
      throw std::out_of_range("ChatDataset: window " + std::to_string(w) + " of " + std::to_string(size()));
    int64_t* x = input.data_ptr<int64_t>() + r * t;
    int64_t* y = target.data_ptr<int64_t>() + r * t;
    int64_t* p = positions.defined() ? positions.data_ptr<int64_t>() + r * t : nullptr;
    int64_t column = 0;
    for (int64_t e = impl.windows[w]; e < impl.windows[w + 1]; ++e) {
      const int64_t begin = impl.offsets[e], length = impl.offsets[e + 1] - begin;
      for (int64_t i = 0; i < length; ++i, ++column) {
        x[column] = impl.tokens[begin + i];
        if (i + 1 < length && impl.trained[begin + i + 1]) y[column] = impl.tokens[begin + i + 1];
        if (p) p[column] = i;
      }
    }
    for (int64_t i = 0; p && column + i < t; ++i) p[column + i] = i;  // the padding: a sequence of its own
  }
  return Batch{input, target, positions};
}

std::string ChatDataset::summary() const {
  const ChatStats& s = impl_->stats;
  const int64_t context = impl_->options.context();
  std::string out = std::to_string(s.records - s.dropped) + " examples in " + std::to_string(s.windows) +
                    " windows of " + std::to_string(context) + " tokens (";
  const double full =
      100.0 * static_cast<double>(s.tokens) / static_cast<double>(std::max<int64_t>(1, s.windows * context));
  out += std::to_string(static_cast<int>(full)) + "% of them the examples'), " + std::to_string(s.trained_tokens) +
         " trained tokens";
  if (s.truncated > 0) out += ", " + std::to_string(s.truncated) + " truncated";
  if (s.dropped > 0) {
    out += ", " + std::to_string(s.dropped) + " left out (overlong: " + impl_->options.overlong() +
           ", or no answer's token left)";
  }
  return out;
}

std::vector<int64_t> ChatDataset::input_shape() const { return {impl_->options.context()}; }
int64_t ChatDataset::tokens_per_example() const { return impl_->options.context(); }
int64_t ChatDataset::num_classes() const { return impl_->tokenizer.vocab_size(); }
const ChatStats& ChatDataset::stats() const { return impl_->stats; }
const ChatOptions& ChatDataset::options() const { return impl_->options; }
int64_t ChatDataset::examples() const { return static_cast<int64_t>(impl_->offsets.size()) - 1; }

std::vector<int64_t> ChatDataset::example_tokens(int64_t i) const {
  const Impl& impl = *impl_;
  return {impl.tokens.begin() + impl.offsets.at(i), impl.tokens.begin() + impl.offsets.at(i + 1)};
}

std::vector<bool> ChatDataset::example_trained(int64_t i) const {
  const Impl& impl = *impl_;
  return {impl.trained.begin() + impl.offsets.at(i), impl.trained.begin() + impl.offsets.at(i + 1)};
}

}  // namespace baton
