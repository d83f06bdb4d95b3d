#include "baton/data/webdataset.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <optional>

#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/core/options.h"
#include "baton/io/file.h"
#include "baton/io/text.h"
#include "baton/io/url.h"
#include "baton/io/write.h"
#include "data/image_pipeline.h"

namespace baton {
namespace {

constexpr size_t kMaxNames = 1'000'000;                 // shards a pattern names
constexpr int64_t kMaxSamples = 100'000'000;            // samples in one data set
constexpr uint64_t kMaxMemberBytes = 1ull << 30;        // a member larger is refused as soon as its header is read
constexpr uint64_t kMaxImageBytes = 64ull << 20;        // as read_image_file's bound
constexpr uint64_t kMaxChunkBytes = 256ull << 20;       // one read
constexpr uint64_t kMaxLongName = 64 << 10;             // a GNU long name or pax header
constexpr uint64_t kMaxLabelBytes = 64;                 // a .cls member
constexpr size_t kHeldBeyondBatch = 3;                  // chunks kept besides the current batch's
constexpr int kIndexFormat = 1;                         // of a kept index file
constexpr uint64_t kOrderSalt = 0x5745424441544153ULL;  // the order's random numbers, apart from the crops'

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::vector<std::string> brace_items(const std::string& inside, const std::string& pattern) {
  std::vector<std::string> items;
  const size_t dots = inside.find("..");
  if (dots == std::string::npos) {
    if (inside.find(',') == std::string::npos) {
      throw std::invalid_argument(pattern + ": a brace holds a range {000..099} or a list {a,b}, not '{" + inside +
                                  "}'");
    }
    size_t start = 0;
    for (size_t comma; (comma = inside.find(',', start)) != std::string::npos; start = comma + 1) {
      items.push_back(inside.substr(start, comma - start));
    }
    items.push_back(inside.substr(start));
    return items;
  }
  const std::string lo = inside.substr(0, dots), hi = inside.substr(dots + 2);
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!digits(lo) || !digits(hi)) {
    throw std::invalid_argument(pattern + ": the range '{" + inside + "}' is not two whole numbers {FIRST..LAST}");
  }
  const int64_t first = std::stoll(lo), last = std::stoll(hi);
  if (last < first) throw std::invalid_argument(pattern + ": the range '{" + inside + "}' runs backwards");
  if (last - first >= static_cast<int64_t>(kMaxNames)) {
    throw std::invalid_argument(pattern + ": more than 1,000,000 names");
  }
  const bool padded = (lo.size() > 1 && lo[0] == '0') || (hi.size() > 1 && hi[0] == '0');
  const size_t width = padded ? std::max(lo.size(), hi.size()) : 0;
  for (int64_t i = first; i <= last; ++i) {
    std::string s = std::to_string(i);
    if (s.size() < width) s.insert(0, width - s.size(), '0');
    items.push_back(std::move(s));
  }
  return items;
}

// A tar header's number field: octal, or base-256 (GNU, for large sizes); UINT64_MAX when neither.
uint64_t tar_number(const char* field, size_t size) {
  if (static_cast<unsigned char>(field[0]) & 0x80) {  // base-256 (GNU, for large sizes)
    uint64_t v = static_cast<unsigned char>(field[0]) & 0x7f;
    for (size_t i = 1; i < size; ++i) {
      if (v > (UINT64_MAX >> 9)) return UINT64_MAX;  // beyond any size (and never wrapped to a small one)
      v = (v << 8) | static_cast<unsigned char>(field[i]);
    }
    return v;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < size && field[i] != '\0'; ++i) {
    if (field[i] == ' ') continue;
    if (field[i] < '0' || field[i] > '7') return UINT64_MAX;
    v = v * 8 + static_cast<uint64_t>(field[i] - '0');
  }
  return v;
}

// Whether `block` (512 bytes) is a tar header whose checksum holds.
bool tar_checksum_holds(std::string_view block) {
  uint64_t sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(block[i]);
  return tar_number(&block[148], 8) == sum;
}

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
    throw ImageError(shard_ + ": truncated: the file ends at byte " + std::to_string(end) + ", inside " + what);
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
      throw ImageError(shard_ + ": not a tar file (no tar header at byte " + std::to_string(need_) + ")");
    }
    if (++headers_ > max_headers_) {  // every kind counts: directories, long names, pax records, files
      throw ImageError(shard_ + ": more than " + std::to_string(max_headers_) +
                       " tar headers in one shard (max_tar_headers); split it into shards");
    }
    std::string name(block.data(), strnlen(block.data(), 100));
    if (std::memcmp(&block[257], "ustar\0", 6) == 0 && block[345] != '\0') {
      name = std::string(&block[345], strnlen(&block[345], 155)) + "/" + name;
    }
    if (!long_name_.empty()) name = std::exchange(long_name_, {});
    const uint64_t size = tar_number(&block[124], 12);
    if (size == UINT64_MAX) throw ImageError(shard_ + ": the tar header of " + one_line(name) + " gives a bad size");
    if (size > kMaxMemberBytes) {  // refused now, never read (or streamed) through
      throw ImageError(shard_ + ": member " + one_line(name) + " claims " + human_bytes(size) +
                       ", more than the 1 GiB a WebDataset member may have");
    }
    const uint64_t content = need_ + 512;
    next_header_ = content + (size + 511) / 512 * 512;
    const char type = block[156];
    const auto bounded = [&](uint64_t most, const char* what) {
      if (size > most) throw ImageError(shard_ + ": " + what + " of " + std::to_string(size) + " bytes at " + name);
    };
    if ((type == 'L' || type == 'x') && size > 0) {
      bounded(kMaxLongName, type == 'L' ? "a long name" : "a pax header");
      return expect(type == 'L' ? Want::kLongName : Want::kPax, content, size);
    }
    if (type == '0' || type == '\0' || type == '7') {
      members_.push_back({name, content, size, {}});
      if (lower(name).ends_with(".cls") && size > 0) {
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

// The index a URL shard had when the server gave `info`, from `path`; nullopt when there is none,
// it is another version's, or it does not read (then the shard is indexed again).
std::optional<std::vector<Member>> cached_index(const std::string& path, const std::string& url, const UrlInfo& info) {
  try {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) return std::nullopt;
    const nlohmann::json j = nlohmann::json::parse(read_file(path, {.what = "the index", .max_bytes = 1ull << 30}));
    if (j.at("format") != kIndexFormat || j.at("url") != url || j.at("size") != info.size ||
        j.at("etag") != info.etag || j.at("modified") != info.modified) {
      return std::nullopt;
    }
    std::vector<Member> members;
    members.reserve(j.at("members").size());
    uint64_t end = 0;
    for (const auto& m : j.at("members")) {
      members.push_back(
          {m.at(0).get<std::string>(), m.at(1).get<uint64_t>(), m.at(2).get<uint64_t>(), m.at(3).get<std::string>()});
      const Member& last = members.back();
      // In order, inside the shard, each after a header: else the index is not this shard's.
      if (last.offset < end + 512 || last.size > kMaxMemberBytes || last.offset + last.size > info.size ||
          last.text.size() > kMaxLabelBytes) {
        spdlog::warn("{}: the kept index of {} does not match the shard (member {} at byte {}); indexing it again",
                     path, url, one_line(last.name, 80), last.offset);
        return std::nullopt;
      }
      end = last.offset + last.size;
    }
    return members;
  } catch (const nlohmann::json::exception&) {  // its text names nlohmann's internals: not for a user
    spdlog::warn("{}: the kept index of {} is not one this baton wrote (corrupt?); indexing the shard again", path,
                 url);
    return std::nullopt;
  } catch (const std::exception& e) {
    spdlog::warn("{}: the kept index of {} does not read ({}); indexing the shard again", path, url,
                 one_line(e.what()));
    return std::nullopt;
  }
}

void keep_index(const std::string& path, const std::string& url, const UrlInfo& info,
                const std::vector<Member>& members) {
  if (info.size == UINT64_MAX || (info.etag.empty() && info.modified.empty())) return;  // no version to check
  nlohmann::json list = nlohmann::json::array();
  for (const Member& m : members) list.push_back({m.name, m.offset, m.size, m.text});
  const nlohmann::json j = {{"format", kIndexFormat},    {"url", url},
                            {"size", info.size},         {"etag", info.etag},
                            {"modified", info.modified}, {"members", std::move(list)}};
  try {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    write_file_atomically(path, j.dump());
  } catch (const std::exception& e) {
    spdlog::warn("{}: cannot keep the index of {} ({}); the next run indexes it again", path, url, e.what());
  }
}

std::string index_folder(const WebDatasetOptions& options) {
  if (!options.index_cache().empty()) return options.index_cache();
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string base = xdg && *xdg ? xdg : std::string(home && *home ? home : "/tmp") + "/.cache";
  return base + "/baton/webdataset";
}

// Where a URL shard's index is kept.
std::string kept_index_path(const std::string& shard, const WebDatasetOptions& options) {
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx.json", static_cast<unsigned long long>(std::hash<std::string>{}(shard)));
  return index_folder(options) + "/" + name;
}

// A shard's members: a local file's headers read where they are, a URL's kept index when the server
// still has that version, else the URL streamed once (and its index kept).
std::vector<Member> scan_shard(const std::string& shard, const WebDatasetOptions& options) {
  TarScanner scanner(shard, options.max_tar_headers());
  const UrlOptions url{.retry_seconds = options.retry_seconds()};
  try {
    if (is_url(shard)) {
      UrlInfo info;
      std::string kept;
      if (options.cache_index()) {
        info = url_info(shard, url);
        kept = kept_index_path(shard, options);
        if (auto members = cached_index(kept, shard, info)) return std::move(*members);
      }
      uint64_t at = 0;
      read_stream(
          shard,
          [&](std::string_view piece) {
            scanner.feed(at, piece);
            at += piece.size();
            return !scanner.done();
          },
          url);
      scanner.finish(at);
      if (!kept.empty()) keep_index(kept, shard, info, scanner.members());
      return std::move(scanner.members());
    }
    ReadableFile file(shard, {.what = "the shard", .max_bytes = url.max_bytes});
    while (!scanner.done()) {
      const uint64_t at = scanner.need_offset(), length = scanner.need_length();
      if (at + length > file.size()) {
        scanner.finish(file.size());
        break;
      }
      scanner.feed(at, read_range(shard, at, length, url));
    }
  } catch (const FileError& e) {
    throw ImageError(e.what());
  }
  return std::move(scanner.members());
}

}  // namespace

std::vector<std::string> expand_braces(const std::string& pattern) {
  const size_t open = pattern.find('{'), close = pattern.find('}');
  if (open == std::string::npos && close == std::string::npos) return {pattern};
  if (open == std::string::npos || close == std::string::npos || close < open) {
    throw std::invalid_argument(pattern + ": braces that do not pair ({000..099})");
  }
  const std::string inside = pattern.substr(open + 1, close - open - 1);
  if (inside.find('{') != std::string::npos) throw std::invalid_argument(pattern + ": braces inside braces");
  const std::vector<std::string> items = brace_items(inside, pattern);
  const std::vector<std::string> rest = expand_braces(pattern.substr(close + 1));
  if (items.size() * rest.size() > kMaxNames) throw std::invalid_argument(pattern + ": more than 1,000,000 names");
  std::vector<std::string> names;
  names.reserve(items.size() * rest.size());
  for (const std::string& item : items) {
    for (const std::string& tail : rest) {
      std::string name = pattern.substr(0, open);
      names.push_back(name.append(item).append(tail));
    }
  }
  return names;
}

struct WebDataset::Index {
  struct Sample {
    uint32_t shard = 0;
    int32_t label = 0;
    uint64_t offset = 0;  // the image's bytes in the shard
    uint64_t size = 0;
    std::string key;            // the image member's name
    uint64_t label_offset = 0;  // the .cls member's bytes
    uint64_t label_size = 0;
    // The bytes a read must cover: both members and their tar headers (checked against the index).
    uint64_t first() const { return std::min(offset, label_offset) - 512; }
    uint64_t last() const { return std::max(offset + size, label_offset + label_size); }
  };
  // A run of one shard's samples read with one request: bytes [begin, end) of the shard.
  struct Chunk {
    uint32_t shard = 0;
    int64_t first = 0;  // samples [first, end)
    int64_t end = 0;
    uint64_t begin = 0;
    uint64_t finish = 0;
  };
  std::vector<Sample> samples;
  std::vector<Chunk> chunks;

  int64_t chunk_of(int64_t sample) const {
    const auto it =
        std::upper_bound(chunks.begin(), chunks.end(), sample, [](int64_t s, const Chunk& c) { return s < c.first; });
    return (it - chunks.begin()) - 1;
  }

  // The samples a shard's members make (consecutive members sharing a key: KEY.jpg|jpeg|png and
  // KEY.cls). A sample without one of them is an error, or (skip) reported and left out.
  void add(uint32_t shard, const std::string& name, const std::vector<Member>& members,
           const std::function<void(std::string)>& bad) {
    for (size_t i = 0; i < members.size();) {
      const auto split = [](const std::string& n) {
        const size_t slash = n.rfind('/');
        const size_t dot = n.find('.', slash == std::string::npos ? 0 : slash + 1);
        return dot == std::string::npos ? std::pair{n, std::string()}
                                        : std::pair{n.substr(0, dot), lower(n.substr(dot + 1))};
      };
      const std::string key = split(members[i].name).first;
      const Member *image = nullptr, *label = nullptr;
      for (; i < members.size() && split(members[i].name).first == key; ++i) {
        const std::string ext = split(members[i].name).second;
        if (!image && (ext == "jpg" || ext == "jpeg" || ext == "png")) image = &members[i];
        if (!label && ext == "cls") label = &members[i];
      }
      const std::string where = name + ": ";
      if (!image || !label) {
        std::string why = where;
        if (image) {
          why.append(image->name).append(" has no ").append(key).append(".cls (a sample is KEY.jpg|png and KEY.cls)");
        } else if (label) {
          why.append(label->name).append(" has no ").append(key).append(".jpg, .jpeg or .png");
        } else {
          why.append(key).append(" has no image (.jpg, .jpeg, .png) and no .cls");
        }
        bad(std::move(why));
        continue;
      }
      std::string text = label->text;
      text.erase(std::remove_if(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); }), text.end());
      if (text.empty() || text.size() > 7 || text.find_first_not_of("0123456789") != std::string::npos) {
        bad(where + label->name + " holds '" + label->text.substr(0, 20) + "', not a class index (0, 1, ...)");
        continue;
      }
      if (image->size > kMaxImageBytes) {
        bad(where + image->name + ": larger than 64 MiB");
        continue;
      }
      if (image->offset < 512 || label->offset < 512) {
        bad(where + key + ": a member without its tar header");
        continue;
      }
      samples.push_back({shard, std::stoi(text), image->offset, image->size, image->name, label->offset, label->size});
      if (static_cast<int64_t>(samples.size()) > kMaxSamples)
        throw ImageError(name + ": more than 100,000,000 samples");
    }
  }

  // The bytes read for a sample are what the index says: both members' tar headers (checksum,
  // size) and the label in its .cls member. A shard that changed, or a kept index that was altered
  // (`kept`: its path), is an error naming them, never a sample trained on with another label.
  static void check(const std::string& bytes, uint64_t begin, const Sample& s, const std::string& shard,
                    const std::string& kept) {
    const auto fault = [&](const std::string& what) {
      std::string why = shard + ": " + one_line(s.key) + ": " + what + "; the shard changed since it was indexed";
      if (!kept.empty()) why += ", or its kept index " + kept + " was altered (delete it)";
      throw ImageError(why);
    };
    for (const auto& [offset, size] : {std::pair{s.offset, s.size}, std::pair{s.label_offset, s.label_size}}) {
      const std::string_view header(bytes.data() + (offset - 512 - begin), 512);
      if (!tar_checksum_holds(header) || tar_number(&header[124], 12) != size) {
        fault("no tar header of a " + std::to_string(size) + "-byte member at byte " + std::to_string(offset - 512));
      }
    }
    std::string text(bytes.data() + (s.label_offset - begin), s.label_size);
    std::erase_if(text, [](unsigned char c) { return std::isspace(c); });
    if (text != std::to_string(s.label)) {
      fault("its .cls holds '" + one_line(text, 20) + "', not the indexed label " + std::to_string(s.label));
    }
  }

  // Each shard's samples in runs of at most `per_chunk` samples and kMaxChunkBytes.
  void cut(int64_t per_chunk) {
    for (int64_t i = 0; i < static_cast<int64_t>(samples.size()); ++i) {
      const Sample& s = samples[i];
      if (chunks.empty() || chunks.back().shard != s.shard || chunks.back().end - chunks.back().first >= per_chunk ||
          s.first() < chunks.back().begin || s.last() - chunks.back().begin > kMaxChunkBytes) {
        chunks.push_back({s.shard, i, i, s.first(), s.last()});
      }
      chunks.back().end = i + 1;
      chunks.back().finish = std::max(chunks.back().finish, s.last());
    }
  }
};

// The chunks read lately, the most recent last.
struct WebDataset::Cache {
  std::mutex mutex;
  std::vector<std::pair<int64_t, std::shared_ptr<const std::string>>> held;
  std::atomic<int64_t> reads{0};
};

WebDataset::WebDataset(std::vector<std::string> shards, WebDatasetOptions options)
    : shards_(std::move(shards)),
      options_(std::move(options)),
      pipeline_(std::make_unique<image_detail::ImagePipeline>(options_.images())),
      index_(std::make_unique<Index>()),
      cache_(std::make_unique<Cache>()) {}

WebDataset::~WebDataset() = default;

std::shared_ptr<WebDataset> WebDataset::open(const std::vector<std::string>& shards, WebDatasetOptions options,
                                             int64_t num_classes) {
  if (shards.empty()) throw ImageError("no shards given");
  if (options.shuffle_buffer() < 1) {
    throw std::invalid_argument("shuffle_buffer must be at least 1, got " + std::to_string(options.shuffle_buffer()));
  }
  if (!(options.retry_seconds() >= 0)) throw std::invalid_argument("retry_seconds must be 0 or more");
  std::shared_ptr<WebDataset> data(new WebDataset(shards, std::move(options)));
  std::vector<std::vector<Member>> members(shards.size());
  data->pipeline_->run(static_cast<int64_t>(shards.size()),
                       [&](int64_t i) { members[i] = scan_shard(shards[i], data->options_); });
  const bool skip = data->options_.images().bad_files() == BadFiles::kSkip;
  Index& index = *data->index_;
  for (size_t s = 0; s < shards.size(); ++s) {
    index.add(static_cast<uint32_t>(s), shards[s], members[s], [&](std::string why) {
      if (!skip) throw ImageError(why);
      data->pipeline_->report_skip(std::move(why));
    });
    members[s] = {};
  }
  const auto groups = static_cast<int64_t>(index.samples.size() + data->pipeline_->skipped().size());
  data->pipeline_->warn_skipped(shards.front() + (shards.size() > 1 ? " ..." : ""), groups, "samples");
  if (index.samples.empty()) throw ImageError(shards.front() + (shards.size() > 1 ? " ...: " : ": ") + "no samples");
  int64_t largest = 0;
  for (const auto& s : index.samples) largest = std::max<int64_t>(largest, s.label);
  if (largest >= kMaxClasses)
    throw ImageError("a .cls of " + std::to_string(largest) + ": more than 1,000,000 classes");
  if (num_classes > 0 && largest >= num_classes) {
    const auto it =
        std::find_if(index.samples.begin(), index.samples.end(), [&](const auto& s) { return s.label == largest; });
    throw ImageError(shards[it->shard] + ": " + it->key + " has label " + std::to_string(largest) +
                     " but the training set has " + std::to_string(num_classes) + " classes");
  }
  data->num_classes_ = num_classes > 0 ? num_classes : largest + 1;
  index.cut(data->options_.shuffle_buffer());
  return data;
}

int64_t WebDataset::size() const { return static_cast<int64_t>(index_->samples.size()); }

std::vector<int64_t> WebDataset::input_shape() const { return pipeline_->input_shape(); }

at::Tensor WebDataset::finish_inputs(const at::Tensor& inputs) const { return pipeline_->finish_inputs(inputs); }

std::vector<std::string> WebDataset::class_names() const {
  std::vector<std::string> names;
  names.reserve(num_classes_);
  for (int64_t c = 0; c < num_classes_; ++c) names.push_back(std::to_string(c));
  return names;
}

std::string WebDataset::sample_name(int64_t index) const {
  const auto& s = index_->samples.at(index);
  return shards_[s.shard] + ": " + s.key;
}

int64_t WebDataset::label(int64_t index) const { return index_->samples.at(index).label; }

std::vector<std::string> WebDataset::skipped() const { return pipeline_->skipped(); }

int64_t WebDataset::chunk_reads() const { return cache_->reads.load(); }

at::Tensor WebDataset::epoch_order(int64_t epoch, uint64_t seed, bool shuffle) const {
  const int64_t n = size();
  at::Tensor order = at::empty({n}, at::kLong);
  int64_t* o = order.data_ptr<int64_t>();
  if (!shuffle) {
    std::iota(o, o + n, int64_t{0});
    return order;
  }
  const auto& chunks = index_->chunks;
  std::vector<int64_t> chunk_order(chunks.size());
  std::iota(chunk_order.begin(), chunk_order.end(), int64_t{0});
  ExampleRng rng(seed ^ kOrderSalt, epoch, -1);
  for (int64_t i = static_cast<int64_t>(chunk_order.size()) - 1; i > 0; --i)
    std::swap(chunk_order[i], chunk_order[rng.below(i + 1)]);
  int64_t at = 0;
  for (int64_t c : chunk_order) {
    for (int64_t s = chunks[c].first; s < chunks[c].end; ++s) o[at++] = s;
  }
  const int64_t window = options_.shuffle_buffer();
  for (int64_t w = 0; w * window < n; ++w) {  // the shuffle buffer: samples permuted within a window
    ExampleRng r(seed ^ kOrderSalt, epoch, w);
    int64_t* begin = o + w * window;
    const int64_t len = std::min(window, n - w * window);
    for (int64_t i = len - 1; i > 0; --i) std::swap(begin[i], begin[r.below(i + 1)]);
  }
  return order;
}

Batch WebDataset::get_batch(const at::Tensor& indices) const { return get_epoch_batch(indices, 0); }

Batch WebDataset::get_epoch_batch(const at::Tensor& indices, int64_t epoch) const {
  const at::Tensor index = indices.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t* ids = index.data_ptr<int64_t>();
  std::vector<int64_t> wanted;
  for (int64_t i = 0; i < index.numel(); ++i) {
    if (ids[i] >= 0 && ids[i] < size()) wanted.push_back(index_->chunk_of(ids[i]));
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  // Each chunk from the cache or one read (in parallel), before any decoding: a read that fails is
  // an error of the shard, never a bad image to skip.
  const UrlOptions url{.retry_seconds = options_.retry_seconds()};
  const auto load = [&](int64_t c) -> std::shared_ptr<const std::string> {
    {
      std::lock_guard<std::mutex> lock(cache_->mutex);
      auto& held = cache_->held;
      const auto it = std::find_if(held.begin(), held.end(), [&](const auto& e) { return e.first == c; });
      if (it != held.end()) {
        std::rotate(it, it + 1, held.end());
        return held.back().second;
      }
    }
    const Index::Chunk& chunk = index_->chunks[c];
    auto bytes = std::make_shared<const std::string>(
        read_range(shards_[chunk.shard], chunk.begin, chunk.finish - chunk.begin, url));
    cache_->reads.fetch_add(1);
    std::lock_guard<std::mutex> lock(cache_->mutex);
    cache_->held.emplace_back(c, bytes);
    return bytes;
  };
  std::vector<std::shared_ptr<const std::string>> held(wanted.size());
  pipeline_->run(static_cast<int64_t>(wanted.size()), [&](int64_t i) { held[i] = load(wanted[i]); });
  {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    auto& kept = cache_->held;
    if (kept.size() > wanted.size() + kHeldBeyondBatch)
      kept.erase(kept.begin(), kept.end() - (wanted.size() + kHeldBeyondBatch));
  }
  return pipeline_->batch(index, size(), [&](int64_t id, at::Tensor& out) {
    const int64_t c = index_->chunk_of(id);
    const auto it = std::lower_bound(wanted.begin(), wanted.end(), c);
    const std::shared_ptr<const std::string> bytes =
        (it != wanted.end() && *it == c) ? held[it - wanted.begin()] : load(c);
    const Index::Sample& s = index_->samples[id];
    Index::check(*bytes, index_->chunks[c].begin, s, shards_[s.shard],
                 is_url(shards_[s.shard]) && options_.cache_index() ? kept_index_path(shards_[s.shard], options_) : "");
    const std::string_view image(bytes->data() + (s.offset - index_->chunks[c].begin), s.size);
    pipeline_->render(image, shards_[s.shard] + ": " + s.key, std::nullopt, id, epoch, out);
    return static_cast<int64_t>(s.label);
  });
}

}  // namespace baton
