// A tar file's headers read as a stream (ustar, GNU long names, pax paths): what WebDataset's shards
// are indexed with, whether the bytes come from a local file or an HTTP stream. Every size from the
// input is bounded as soon as it is known, every kind of header counted.
//
//   TarScanner scanner("shard.tar", 1'000'000);
//   scanner.feed(0, bytes);            // pieces in order: a stream, or what need_offset() asks for
//   scanner.finish(bytes.size());      // the end of the file: a member cut short is an error
//   for (const Member& m : scanner.members()) ...
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "baton/io/file.h"
#include "baton/io/text.h"

namespace baton {

inline constexpr uint64_t kMaxMemberBytes = 1ull << 30;  // a member larger is refused as soon as its header is read
inline constexpr uint64_t kMaxLongName = 64 << 10;       // a GNU long name or pax header
inline constexpr uint64_t kMaxLabelBytes = 64;           // a .cls member

// A shard that is not a tar file, is cut short, or holds what no shard should (one line, naming it).
class TarError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A tar header's number field: octal, or base-256 (GNU, for large sizes); UINT64_MAX when neither
// (or beyond any size).
uint64_t tar_number(const char* field, size_t size);

// Whether `block` (512 bytes) is a tar header whose checksum holds.
bool tar_checksum_holds(std::string_view block);

// KEY.cls (any case): a member whose text is read (a class index).
bool is_label_name(const std::string& name);

// A member of a tar file: its name, where its bytes are, and (a .cls member) its text.
struct Member {
  std::string name;
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string text;
};

// Reads a tar file's headers (ustar, GNU long names, pax paths) from pieces of it given in order,
// skipping the members' bytes: feed() what need_offset()/need_length() ask for (a local file, read
// there), or every byte (a stream).
class TarScanner {
 public:
  TarScanner(std::string shard, int64_t max_headers) : shard_(std::move(shard)), max_headers_(max_headers) {}
  bool done() const { return want_ == Want::kDone; }
  uint64_t need_offset() const { return need_; }
  size_t need_length() const { return length_; }
  std::vector<Member>& members() { return members_; }

  void feed(uint64_t offset, std::string_view data) {
    while (!data.empty() && !done()) {
      const uint64_t at = need_ + buffer_.size();  // the next byte wanted
      if (offset + data.size() <= at) return;
      if (offset < at) data.remove_prefix(at - offset), offset = at;
      if (offset > at) throw std::logic_error("TarScanner: a gap in the bytes fed");
      const size_t take = std::min(length_ - buffer_.size(), data.size());
      buffer_.append(data.substr(0, take));
      data.remove_prefix(take), offset += take;
      if (buffer_.size() == length_) {
        const std::string piece = std::exchange(buffer_, {});
        process(piece);
      }
    }
  }

  // The file ends at byte `end`: an archive without its closing blocks is whole when it ends at a
  // header; anything else was cut.
  void finish(uint64_t end) {
    if (done() || (want_ == Want::kHeader && need_ == end && buffer_.empty())) {
      want_ = Want::kDone;
      return;
    }
    const std::string what = members_.empty() ? std::string("a header") : "member " + members_.back().name;
    throw TarError(shard_ + ": truncated: the file ends at byte " + std::to_string(end) + ", inside " + what);
  }

 private:
  enum class Want { kHeader, kLongName, kPax, kLabel, kDone };

  void expect(Want want, uint64_t offset, uint64_t length) { want_ = want, need_ = offset, length_ = length; }

  void process(const std::string& piece) {
    switch (want_) {
      case Want::kHeader: return header(piece);
      case Want::kLongName: long_name_ = piece.substr(0, piece.find('\0')); break;
      case Want::kPax: pax(piece); break;
      case Want::kLabel: members_.back().text = piece; break;
      case Want::kDone: return;
    }
    expect(Want::kHeader, next_header_, 512);
  }

  void header(const std::string& block) {
    if (std::all_of(block.begin(), block.end(), [](char c) { return c == '\0'; })) {
      want_ = Want::kDone;
      return;
    }
    if (!tar_checksum_holds(block)) {
      throw TarError(shard_ + ": not a tar file (no tar header at byte " + std::to_string(need_) + ")");
    }
    if (++headers_ > max_headers_) {  // every kind counts: directories, long names, pax records, files
      throw TarError(shard_ + ": more than " + std::to_string(max_headers_) +
                     " tar headers in one shard (max_tar_headers); split it into shards");
    }
    std::string name(block.data(), strnlen(block.data(), 100));
    if (std::memcmp(&block[257], "ustar\0", 6) == 0 && block[345] != '\0') {
      name = std::string(&block[345], strnlen(&block[345], 155)) + "/" + name;
    }
    if (!long_name_.empty()) name = std::exchange(long_name_, {});
    const uint64_t size = tar_number(&block[124], 12);
    if (size == UINT64_MAX) throw TarError(shard_ + ": the tar header of " + one_line(name) + " gives a bad size");
    if (size > kMaxMemberBytes) {  // refused now, never read (or streamed) through
      throw TarError(shard_ + ": member " + one_line(name) + " claims " + human_bytes(size) +
                     ", more than the 1 GiB a WebDataset member may have");
    }
    const uint64_t content = need_ + 512;
    next_header_ = content + (size + 511) / 512 * 512;
    const char type = block[156];
    const auto bounded = [&](uint64_t most, const char* what) {
      if (size > most) throw TarError(shard_ + ": " + what + " of " + std::to_string(size) + " bytes at " + name);
    };
    if ((type == 'L' || type == 'x') && size > 0) {
      bounded(kMaxLongName, type == 'L' ? "a long name" : "a pax header");
      return expect(type == 'L' ? Want::kLongName : Want::kPax, content, size);
    }
    if (type == '0' || type == '\0' || type == '7') {
      members_.push_back({name, content, size, {}});
      if (is_label_name(name) && size > 0) {
        bounded(kMaxLabelBytes, "a .cls member");
        return expect(Want::kLabel, content, size);
      }
    }
    expect(Want::kHeader, next_header_, 512);
  }

  // pax records "LENGTH key=value\n": the path is the next member's name.
  void pax(const std::string& records) {
    for (size_t at = 0; at < records.size();) {
      const size_t space = records.find(' ', at);
      if (space == std::string::npos) break;
      const uint64_t length = std::strtoull(records.c_str() + at, nullptr, 10);
      if (length == 0 || at + length > records.size()) break;
      const std::string record = records.substr(space + 1, at + length - space - 2);
      if (record.rfind("path=", 0) == 0) long_name_ = record.substr(5);
      at += length;
    }
  }

  std::string shard_;
  Want want_ = Want::kHeader;
  uint64_t need_ = 0;
  size_t length_ = 512;
  std::string buffer_;
  std::string long_name_;
  uint64_t next_header_ = 0;
  std::vector<Member> members_;
  int64_t max_headers_;
  int64_t headers_ = 0;
};

}  // namespace baton
