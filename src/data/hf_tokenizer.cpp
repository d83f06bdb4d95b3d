// Byte-level BPE from a Hugging Face tokenizer.json (include/baton/data/hf_tokenizer.h).
#include "baton/data/hf_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "baton/io/file.h"

namespace baton {
namespace {

using json = nlohmann::json;

// GPT-2's regular expression: what ByteLevel's pre-tokenizer splits with when use_regex is on.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The length of the UTF-8 sequence that starts with byte `b` (1 for a stray continuation byte).
std::size_t utf8_length(unsigned char b) {
  if (b >= 0xF0) return 4;
  if (b >= 0xE0) return 3;
  if (b >= 0xC0) return 2;
  return 1;
}

// GPT-2's bytes_to_unicode: each byte as a printable character, UTF-8 encoded.
std::array<std::string, 256> byte_characters() {
  std::array<std::string, 256> out;
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    append_utf8(out[static_cast<std::size_t>(b)], printable ? static_cast<uint32_t>(b) : 256U + extra++);
  }
  return out;
}

// Unicode's White_Space characters: what \s is to the tokenizers' regular expressions (Oniguruma).
// PCRE2's \s also takes U+180E, which Unicode 6.3 took out of it.
constexpr const char* kWhiteSpace =
    R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// The pattern with \s and \S spelled as White_Space (in a class: its members; outside: a class).
std::string with_unicode_white_space(const std::string& pattern) {
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : std::string("[").append(kWhiteSpace).append("]");
      } else if (e == 'S' && !in_class) {
        out += std::string("[^").append(kWhiteSpace).append("]");
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
    } else if (c == ']' && in_class) {
      in_class = false;
    }
    out += c;
  }
  return out;
}

}  // namespace

namespace detail {

// A compiled PCRE2 pattern (UTF, Unicode properties, JIT when it can).
class TokenizerPattern {
 public:
  TokenizerPattern(const std::string& given, const std::string& where) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    const std::string pattern = with_unicode_white_space(given);
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP, &error,
                          &offset, nullptr);
    if (code_ == nullptr) {
      std::array<PCRE2_UCHAR, 256> message{};
      pcre2_get_error_message(error, message.data(), message.size());
      throw std::invalid_argument(where + ": the pattern does not compile at " + std::to_string(offset) + " (" +
                                  reinterpret_cast<const char*>(message.data()) + ")");
    }
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // without JIT it matches all the same
  }
  ~TokenizerPattern() { pcre2_code_free(code_); }
  TokenizerPattern(const TokenizerPattern&) = delete;
  TokenizerPattern& operator=(const TokenizerPattern&) = delete;

  // `text` cut into the matches and the gaps between them (Split's "Isolated"), in order.
  void split(std::string_view text, std::vector<std::string_view>& out) const {
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(code_, nullptr);
    std::size_t at = 0, gap = 0;
    while (at < text.size()) {
      const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), at,
                                 at == 0 ? 0 : PCRE2_NO_UTF_CHECK, match, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        const std::size_t bad = pcre2_get_startchar(match);  // after a UTF error: the offending byte
        pcre2_match_data_free(match);
        throw std::invalid_argument("the text is not UTF-8 (at byte " + std::to_string(bad) + ")");
      }
      const PCRE2_SIZE* v = pcre2_get_ovector_pointer(match);
      if (v[0] > gap) out.push_back(text.substr(gap, v[0] - gap));
      if (v[1] > v[0]) out.push_back(text.substr(v[0], v[1] - v[0]));
      gap = v[1];
      at = v[1] > v[0] ? v[1] : v[1] + utf8_length(static_cast<unsigned char>(text[v[1]]));
    }
    if (gap < text.size()) out.push_back(text.substr(gap));
    pcre2_match_data_free(match);
  }

 private:
  pcre2_code* code_ = nullptr;
};

}  // namespace detail

struct HfTokenizer::Impl {
  std::string file;
  std::unordered_map<std::string, int64_t> vocab;
  std::vector<std::string> tokens;                     // by id ("" where none)
  std::unordered_map<std::string, int> ranks;          // "left right" -> rank
  std::vector<std::pair<std::string, int64_t>> added;  // longest first
  std::vector<bool> is_added;
  std::unique_ptr<detail::TokenizerPattern> pattern;  // none: the whole text is one piece
  bool add_prefix_space = false;
  bool ignore_merges = false;
  Template single;
  int64_t unk = -1;
  std::array<std::string, 256> byte_chars = byte_characters();
  std::unordered_map<std::string, unsigned char> char_bytes;
  // Pieces already merged, in shards of their own lock: threads encoding parts of a text at once
  // (baton tokenize --threads) seldom wait for each other.
  struct CacheShard {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<int64_t>> pieces;
  };
  static constexpr std::size_t kCacheShards = 64;
  mutable std::array<CacheShard, kCacheShards> cache;

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw std::invalid_argument(file + ": " + key + ": " + why);
  }

  void read_pre_tokenizer(const json& p) {
    if (p.is_null()) return;
    const std::string type = p.value("type", "");
    if (type == "ByteLevel") {
      add_prefix_space = p.value("add_prefix_space", false);
      if (p.value("use_regex", true)) pattern = std::make_unique<detail::TokenizerPattern>(kGpt2Pattern, file);
      return;
    }
    if (type == "Sequence" && p.contains("pretokenizers") && p["pretokenizers"].size() == 2 &&
        p["pretokenizers"][0].value("type", "") == "Split" && p["pretokenizers"][1].value("type", "") == "ByteLevel" &&
        !p["pretokenizers"][1].value("use_regex", true)) {
      const json& split = p["pretokenizers"][0];
      if (split.value("behavior", "") != "Isolated" || split.value("invert", false) || !split.contains("pattern") ||
          !split["pattern"].contains("Regex")) {
        fail("pre_tokenizer", "a Split other than an Isolated regular expression is not implemented");
      }
      add_prefix_space = p["pretokenizers"][1].value("add_prefix_space", false);
      pattern = std::make_unique<detail::TokenizerPattern>(split["pattern"]["Regex"].get<std::string>(),
                                                           file + ": pre_tokenizer");
      return;
    }
    fail("pre_tokenizer", p.dump().substr(0, 120) +
                              " is not implemented (ByteLevel, or a Sequence of a Split regular expression and "
                              "ByteLevel: GPT-2's, Llama 3's and Qwen's)");
  }

  void read_model(const json& m) {
    if (m.value("type", "") != "BPE") fail("model.type", "'" + m.value("type", "") + "' is not implemented (BPE)");
    if (m.value("byte_fallback", false)) fail("model.byte_fallback", "true is not implemented (a byte-level BPE)");
    ignore_merges = m.value("ignore_merges", false);
    for (const auto& [token, id] : m.at("vocab").items()) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max())
        fail("model.vocab", "'" + token + "': expected an id from 0 to 2^31");
      vocab[token] = id.get<int64_t>();
    }
    int rank = 0;
    for (const auto& merge : m.at("merges")) {
      std::string left, right;
      if (merge.is_string()) {
        const std::string text = merge.get<std::string>();
        const std::size_t space = text.find(' ');
        if (space == std::string::npos) fail("model.merges", "'" + text + "' is not two tokens");
        left = text.substr(0, space);
        right = text.substr(space + 1);
      } else if (merge.is_array() && merge.size() == 2) {
        left = merge[0].get<std::string>();
        right = merge[1].get<std::string>();
      } else {
        fail("model.merges", "expected \"left right\" or [left, right], got " + merge.dump());
      }
      const std::string pair = std::string(left).append(" ").append(right);
      if (!vocab.count(left + right)) fail("model.merges", "'" + pair + "' makes a token not in the vocab");
      ranks.emplace(pair, rank++);
    }
    if (m.contains("unk_token") && m["unk_token"].is_string()) {
      const auto it = vocab.find(m["unk_token"].get<std::string>());
      if (it != vocab.end()) unk = it->second;
    }
  }

  void read_added(const json& list) {
    if (!list.is_array()) return;
    for (const auto& t : list) {
      const std::string content = t.at("content").get<std::string>();
      if (content.empty()) fail("added_tokens", "a token with no content");
      added.emplace_back(content, t.at("id").get<int64_t>());
    }
    std::stable_sort(added.begin(), added.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  }

  // The post-processor's ids around one text (HfTokenizer::single_template).
  void read_post_processor(const json& p) {
    if (p.is_null()) return;
    const std::string type = p.value("type", "");
    if (type == "Sequence") {
      for (const auto& each : p.at("processors")) read_post_processor(each);
    } else if (type == "TemplateProcessing") {
      std::vector<int64_t>* side = &single.before;
      for (const auto& item : p.at("single")) {
        if (item.contains("Sequence")) {
          side = &single.after;
          continue;
        }
        const std::string name = item.at("SpecialToken").at("id").get<std::string>();
        const json& special = p.at("special_tokens");
        if (!special.contains(name)) fail("post_processor", "the template's " + name + " is not in its special_tokens");
        for (const auto& id : special.at(name).at("ids")) side->push_back(id.get<int64_t>());
      }
    } else if (type == "BertProcessing" || type == "RobertaProcessing") {
      single.before.push_back(p.at("cls").at(1).get<int64_t>());
      single.after.push_back(p.at("sep").at(1).get<int64_t>());
    } else if (type != "ByteLevel") {
      fail("post_processor", "'" + type +
                                 "' is not implemented (TemplateProcessing, BertProcessing, RobertaProcessing, "
                                 "ByteLevel, Sequence)");
    }
    for (const int64_t id : single.before) check_id(id);
    for (const int64_t id : single.after) check_id(id);
  }
  void check_id(int64_t id) const {
    if (id < 0 || id >= static_cast<int64_t>(tokens.size())) {
      fail("post_processor",
           "id " + std::to_string(id) + " is not among the tokenizer's " + std::to_string(tokens.size()));
    }
  }

  void index() {
    int64_t size = 0;
    for (const auto& [token, id] : vocab) size = std::max(size, id + 1);
    for (const auto& [content, id] : added) size = std::max(size, id + 1);
    tokens.assign(static_cast<std::size_t>(size), "");
    is_added.assign(static_cast<std::size_t>(size), false);
    for (const auto& [token, id] : vocab) tokens[static_cast<std::size_t>(id)] = token;
    for (const auto& [content, id] : added) {
      tokens[static_cast<std::size_t>(id)] = content;
      is_added[static_cast<std::size_t>(id)] = true;
    }
    for (int b = 0; b < 256; ++b) char_bytes[byte_chars[static_cast<std::size_t>(b)]] = static_cast<unsigned char>(b);
  }

  // One piece of pre-tokenized text: its bytes as characters, merged by rank (GPT-2's bpe()).
  void encode_piece(std::string_view piece, std::vector<int64_t>& out) const {
    std::string mapped;
    for (const char c : piece) mapped += byte_chars[static_cast<unsigned char>(c)];
    CacheShard& shard = cache[std::hash<std::string>{}(mapped) % kCacheShards];
    {
      const std::lock_guard<std::mutex> lock(shard.mutex);
      const auto hit = shard.pieces.find(mapped);
      if (hit != shard.pieces.end()) {
        out.insert(out.end(), hit->second.begin(), hit->second.end());
        return;
      }
    }
    std::vector<int64_t> ids;
    const auto whole = vocab.find(mapped);
    if (ignore_merges && whole != vocab.end()) {
      ids.push_back(whole->second);
    } else {
      std::vector<std::string> symbols;
      for (std::size_t i = 0; i < mapped.size();) {
        const std::size_t n = utf8_length(static_cast<unsigned char>(mapped[i]));
        symbols.push_back(mapped.substr(i, n));
        i += n;
      }
      merge(symbols);
      for (const auto& s : symbols) {
        const auto it = vocab.find(s);
        if (it != vocab.end()) {
          ids.push_back(it->second);
        } else if (unk >= 0) {
          ids.push_back(unk);
        } else {
          throw std::invalid_argument(file + ": the vocabulary has no '" + s + "' and no unk_token");
        }
      }
    }
    out.insert(out.end(), ids.begin(), ids.end());
    const std::lock_guard<std::mutex> lock(shard.mutex);
    if (shard.pieces.size() < (1U << 20) / kCacheShards) shard.pieces.emplace(std::move(mapped), std::move(ids));
  }

  // The pair of lowest rank merged everywhere, left to right, until no pair has a rank.
  void merge(std::vector<std::string>& symbols) const {
    while (symbols.size() > 1) {
      int best = std::numeric_limits<int>::max();
      std::string best_pair;
      for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
        const auto it = ranks.find(std::string(symbols[i]).append(" ").append(symbols[i + 1]));
        if (it != ranks.end() && it->second < best) {
          best = it->second;
          best_pair = it->first;
        }
      }
      if (best == std::numeric_limits<int>::max()) return;
      const std::size_t space = best_pair.find(' ');
      const std::string left = best_pair.substr(0, space), right = best_pair.substr(space + 1);
      std::vector<std::string> merged;
      merged.reserve(symbols.size());
      for (std::size_t i = 0; i < symbols.size(); ++i) {
        if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
          merged.push_back(left + right);
          ++i;
        } else {
          merged.push_back(symbols[i]);
        }
      }
      symbols = std::move(merged);
    }
  }

  // Text without added tokens (each stretch between them: ByteLevel's prefix space goes before
  // each, as in tokenizers): pre-tokenized, each piece encoded.
  void encode_text(std::string_view text, std::vector<int64_t>& out) const {
    if (text.empty()) return;
    std::string prefixed;
    if (add_prefix_space && text.front() != ' ') {
      prefixed = " " + std::string(text);
      text = prefixed;
    }
    std::vector<std::string_view> pieces;
    if (pattern) {
      pattern->split(text, pieces);
    } else {
      pieces.push_back(text);
    }
    for (const auto piece : pieces) encode_piece(piece, out);
  }
};

HfTokenizer::HfTokenizer() : impl_(std::make_unique<Impl>()) {}
HfTokenizer::~HfTokenizer() = default;
HfTokenizer::HfTokenizer(HfTokenizer&&) noexcept = default;
HfTokenizer& HfTokenizer::operator=(HfTokenizer&&) noexcept = default;

HfTokenizer HfTokenizer::load(const std::string& path) {
  std::error_code ec;
  const std::string file =
      std::filesystem::is_directory(path, ec) ? (std::filesystem::path(path) / "tokenizer.json").string() : path;
  HfTokenizer t;
  Impl& impl = *t.impl_;
  impl.file = file;
  json parsed;
  try {
    parsed = json::parse(read_file(file, {.what = "the tokenizer", .max_bytes = 512ull << 20}));
  } catch (const json::exception& e) {
    throw std::invalid_argument(file + ": not JSON (" + std::string(e.what()) + ")");
  }
  try {
    if (!parsed.is_object() || !parsed.contains("model")) impl.fail("model", "missing (not a tokenizer.json)");
    if (parsed.contains("normalizer") && !parsed["normalizer"].is_null()) {
      impl.fail("normalizer", parsed["normalizer"].value("type", "?") + " is not implemented (none)");
    }
    impl.read_model(parsed["model"]);
    impl.read_pre_tokenizer(parsed.value("pre_tokenizer", json()));
    if (parsed.contains("added_tokens")) impl.read_added(parsed["added_tokens"]);
    impl.index();
    impl.read_post_processor(parsed.value("post_processor", json()));
  } catch (const json::exception& e) {  // a key of the wrong type
    throw std::invalid_argument(file + ": not a tokenizer.json this baton reads (" + std::string(e.what()) + ")");
  }
  return t;
}

const HfTokenizer::Template& HfTokenizer::single_template() const { return impl_->single; }

std::vector<int64_t> HfTokenizer::encode(std::string_view text) const {
  const Impl& impl = *impl_;
  std::vector<int64_t> out;
  // The next occurrence of each added token (npos: none left), found again only once passed.
  std::vector<std::size_t> next(impl.added.size());
  for (std::size_t i = 0; i < impl.added.size(); ++i) next[i] = text.find(impl.added[i].first);
  std::size_t at = 0;
  while (true) {
    std::size_t best = std::string_view::npos, which = 0;
    for (std::size_t i = 0; i < impl.added.size(); ++i) {
      if (next[i] != std::string_view::npos && next[i] < at) next[i] = text.find(impl.added[i].first, at);
      if (next[i] < best) {  // the earliest; at a tie the longest (they are sorted longest first)
        best = next[i];
        which = i;
      }
    }
    impl.encode_text(text.substr(at, best == std::string_view::npos ? std::string_view::npos : best - at), out);
    if (best == std::string_view::npos) break;
    out.push_back(impl.added[which].second);
    at = best + impl.added[which].first.size();
  }
  return out;
}

std::string HfTokenizer::decode(const std::vector<int64_t>& ids) const {
  const Impl& impl = *impl_;
  std::string out;
  for (const int64_t id : ids) {
    if (id < 0 || id >= static_cast<int64_t>(impl.tokens.size()) || impl.tokens[static_cast<std::size_t>(id)].empty()) {
      continue;  // as tokenizers does: a model's embeddings are often more than its tokenizer's ids
    }
    const std::string& token = impl.tokens[static_cast<std::size_t>(id)];
    if (impl.is_added[static_cast<std::size_t>(id)]) {
      out += token;
      continue;
    }
    for (std::size_t i = 0; i < token.size();) {
      const std::size_t n = utf8_length(static_cast<unsigned char>(token[i]));
      const auto it = impl.char_bytes.find(token.substr(i, n));
      if (it != impl.char_bytes.end()) {
        out += static_cast<char>(it->second);
      } else {
        out += token.substr(i, n);
      }
      i += n;
    }
  }
  return out;
}

int64_t HfTokenizer::vocab_size() const { return static_cast<int64_t>(impl_->tokens.size()); }

std::optional<int64_t> HfTokenizer::token_id(const std::string& token) const {
  for (const auto& [content, id] : impl_->added) {
    if (content == token) return id;
  }
  const auto it = impl_->vocab.find(token);
  return it == impl_->vocab.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

}  // namespace baton
