// A byte-level BPE tokenizer.json made in the test: every byte's character a token (ids 0-255 in
// byte order, GPT-2's mapping of bytes to printable characters), GPT-2's pre-tokenizer, and the
// merges, vocabulary entries and added tokens a test gives.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace baton::testing {

inline nlohmann::json byte_tokenizer(const std::vector<std::pair<std::string, int64_t>>& more_vocab = {},
                                     const std::vector<std::string>& merges = {},
                                     const nlohmann::json& added_tokens = nlohmann::json::array()) {
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
  for (const auto& [token, id] : more_vocab) vocab[token] = id;
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"added_tokens", added_tokens}};
}

}  // namespace baton::testing
