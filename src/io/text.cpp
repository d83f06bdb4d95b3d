#include "baton/io/text.h"

namespace baton {
namespace {

// The length of the UTF-8 sequence at text[at] (0: not a valid one).
std::size_t utf8_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char c = byte(at);
  const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || at + n > text.size() || (n == 2 && c < 0xc2)) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(at + k) & 0xc0) != 0x80) return 0;
  }
  if (n == 3 && ((c == 0xe0 && byte(at + 1) < 0xa0) || (c == 0xed && byte(at + 1) >= 0xa0))) return 0;
  if (n == 4 && ((c == 0xf0 && byte(at + 1) < 0x90) || c > 0xf4 || (c == 0xf4 && byte(at + 1) >= 0x90))) return 0;
  return n;
}

}  // namespace

std::size_t valid_utf8_prefix(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t n = utf8_length(text, at);
    if (n == 0) break;
    at += n;
  }
  return at;
}

std::string one_line(std::string_view text, std::size_t most) {
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    if (out.size() >= most) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[at]);
    const std::size_t n = utf8_length(text, at);
    if (n > 1) {
      out.append(text.substr(at, n));
      at += n;
      continue;
    }
    ++at;
    if (n == 1 && c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
    } else if (c == '\n' || c == '\r' || c == '\t') {
      out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace baton
