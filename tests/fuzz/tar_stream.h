// The tar scanner on arbitrary bytes, fed as a stream in pieces of a size the input chooses, and as
// a local file (the ranges it asks for): it either throws TarError, or returns members that lie
// inside the bytes, each after a header, never more members than headers, within the bounds. Used by
// the fuzzer (tar_stream_fuzzer.cpp) and by the unit test over its corpus.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "data/tar_scanner.h"

namespace baton::fuzz {

inline constexpr int64_t kFuzzHeaders = 200;  // the corpus has a shard of 250 folders

// Throws std::logic_error naming what does not hold; TarError is the scanner's answer to bad input.
inline void check_members(const std::vector<Member>& members, uint64_t total) {
  uint64_t end = 0;
  for (const Member& m : members) {
    if (m.offset < end + 512 || m.offset + m.size > total || m.size > kMaxMemberBytes)
      throw std::logic_error("a member outside the bytes or not after a header: " + m.name);
    if (m.text.size() > kMaxLabelBytes) throw std::logic_error("a label text beyond its bound");
    end = m.offset + m.size;
  }
  if (static_cast<int64_t>(members.size()) > kFuzzHeaders) throw std::logic_error("more members than headers");
}

inline void check_tar_stream(std::string_view input) {
  if (input.empty()) return;
  const std::size_t piece = 1 + static_cast<unsigned char>(input[0]) * 7;  // 1 to 1786 bytes a piece
  const std::string_view bytes = input.substr(1);
  try {  // a stream: every byte, in pieces
    TarScanner scanner("s.tar", kFuzzHeaders);
    for (std::size_t at = 0; at < bytes.size() && !scanner.done(); at += piece) {
      scanner.feed(at, bytes.substr(at, piece));
    }
    scanner.finish(bytes.size());
    check_members(scanner.members(), bytes.size());
  } catch (const TarError&) {
  }
  try {  // a local file: the ranges it asks for
    TarScanner scanner("s.tar", kFuzzHeaders);
    while (!scanner.done()) {
      const uint64_t at = scanner.need_offset(), length = scanner.need_length();
      if (at + length > bytes.size()) {
        scanner.finish(bytes.size());
        break;
      }
      scanner.feed(at, bytes.substr(at, length));
    }
    check_members(scanner.members(), bytes.size());
  } catch (const TarError&) {
  }
}

}  // namespace baton::fuzz
