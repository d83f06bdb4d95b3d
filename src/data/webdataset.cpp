#include "baton/data/webdataset.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
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
#include "data/tar_scanner.h"

namespace baton {
namespace {

constexpr size_t kMaxNames = 1'000'000;                 // shards a pattern names
constexpr int64_t kMaxSamples = 100'000'000;            // samples in one data set
constexpr uint64_t kMaxImageBytes = 64ull << 20;        // as read_image_file's bound
constexpr uint64_t kMaxChunkBytes = 256ull << 20;       // one read
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
  } catch (const TarError& e) {
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

struct ShardIndex {
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
struct ChunkCache {
  std::mutex mutex;
  std::vector<std::pair<int64_t, std::shared_ptr<const std::string>>> held;
  std::atomic<int64_t> reads{0};
};

struct WebDataset::Impl {
  std::vector<std::string> shards_;
  WebDatasetOptions options_;
  std::unique_ptr<image_detail::ImagePipeline> pipeline_;
  std::unique_ptr<ShardIndex> index_;
  std::unique_ptr<ChunkCache> cache_;
  int64_t num_classes_ = 0;
};

int64_t WebDataset::num_classes() const { return impl_->num_classes_; }
const std::vector<std::string>& WebDataset::shards() const { return impl_->shards_; }
const WebDatasetOptions& WebDataset::options() const { return impl_->options_; }

WebDataset::WebDataset(std::vector<std::string> shards, WebDatasetOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->shards_ = std::move(shards);
  impl_->options_ = std::move(options);
  impl_->pipeline_ = std::make_unique<image_detail::ImagePipeline>(impl_->options_.images());
  impl_->index_ = std::make_unique<ShardIndex>();
  impl_->cache_ = std::make_unique<ChunkCache>();
}

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
  data->impl_->pipeline_->run(static_cast<int64_t>(shards.size()),
                              [&](int64_t i) { members[i] = scan_shard(shards[i], data->impl_->options_); });
  const bool skip = data->impl_->options_.images().bad_files() == BadFiles::kSkip;
  ShardIndex& index = *data->impl_->index_;
  for (size_t s = 0; s < shards.size(); ++s) {
    index.add(static_cast<uint32_t>(s), shards[s], members[s], [&](std::string why) {
      if (!skip) throw ImageError(why);
      data->impl_->pipeline_->report_skip(std::move(why));
    });
    members[s] = {};
  }
  const auto groups = static_cast<int64_t>(index.samples.size() + data->impl_->pipeline_->skipped().size());
  data->impl_->pipeline_->warn_skipped(shards.front() + (shards.size() > 1 ? " ..." : ""), groups, "samples");
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
  data->impl_->num_classes_ = num_classes > 0 ? num_classes : largest + 1;
  index.cut(data->impl_->options_.shuffle_buffer());
  return data;
}

int64_t WebDataset::size() const { return static_cast<int64_t>(impl_->index_->samples.size()); }

std::vector<int64_t> WebDataset::input_shape() const { return impl_->pipeline_->input_shape(); }

at::Tensor WebDataset::finish_inputs(const at::Tensor& inputs) const { return impl_->pipeline_->finish_inputs(inputs); }

std::vector<std::string> WebDataset::class_names() const {
  std::vector<std::string> names;
  names.reserve(impl_->num_classes_);
  for (int64_t c = 0; c < impl_->num_classes_; ++c) names.push_back(std::to_string(c));
  return names;
}

std::string WebDataset::sample_name(int64_t index) const {
  const auto& s = impl_->index_->samples.at(index);
  return impl_->shards_[s.shard] + ": " + s.key;
}

int64_t WebDataset::label(int64_t index) const { return impl_->index_->samples.at(index).label; }

std::vector<std::string> WebDataset::skipped() const { return impl_->pipeline_->skipped(); }

int64_t WebDataset::chunk_reads() const { return impl_->cache_->reads.load(); }

at::Tensor WebDataset::epoch_order(int64_t epoch, uint64_t seed, bool shuffle) const {
  const int64_t n = size();
  at::Tensor order = at::empty({n}, at::kLong);
  int64_t* o = order.data_ptr<int64_t>();
  if (!shuffle) {
    std::iota(o, o + n, int64_t{0});
    return order;
  }
  const auto& chunks = impl_->index_->chunks;
  std::vector<int64_t> chunk_order(chunks.size());
  std::iota(chunk_order.begin(), chunk_order.end(), int64_t{0});
  ExampleRng rng(seed ^ kOrderSalt, epoch, -1);
  for (int64_t i = static_cast<int64_t>(chunk_order.size()) - 1; i > 0; --i)
    std::swap(chunk_order[i], chunk_order[rng.below(i + 1)]);
  int64_t at = 0;
  for (int64_t c : chunk_order) {
    for (int64_t s = chunks[c].first; s < chunks[c].end; ++s) o[at++] = s;
  }
  const int64_t window = impl_->options_.shuffle_buffer();
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
    if (ids[i] >= 0 && ids[i] < size()) wanted.push_back(impl_->index_->chunk_of(ids[i]));
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  // Each chunk from the cache or one read (in parallel), before any decoding: a read that fails is
  // an error of the shard, never a bad image to skip.
  const UrlOptions url{.retry_seconds = impl_->options_.retry_seconds()};
  const auto load = [&](int64_t c) -> std::shared_ptr<const std::string> {
    {
      std::lock_guard<std::mutex> lock(impl_->cache_->mutex);
      auto& held = impl_->cache_->held;
      const auto it = std::find_if(held.begin(), held.end(), [&](const auto& e) { return e.first == c; });
      if (it != held.end()) {
        std::rotate(it, it + 1, held.end());
        return held.back().second;
      }
    }
    const ShardIndex::Chunk& chunk = impl_->index_->chunks[c];
    auto bytes = std::make_shared<const std::string>(
        read_range(impl_->shards_[chunk.shard], chunk.begin, chunk.finish - chunk.begin, url));
    impl_->cache_->reads.fetch_add(1);
    std::lock_guard<std::mutex> lock(impl_->cache_->mutex);
    impl_->cache_->held.emplace_back(c, bytes);
    return bytes;
  };
  std::vector<std::shared_ptr<const std::string>> held(wanted.size());
  impl_->pipeline_->run(static_cast<int64_t>(wanted.size()), [&](int64_t i) { held[i] = load(wanted[i]); });
  {
    std::lock_guard<std::mutex> lock(impl_->cache_->mutex);
    auto& kept = impl_->cache_->held;
    if (kept.size() > wanted.size() + kHeldBeyondBatch)
      kept.erase(kept.begin(), kept.end() - (wanted.size() + kHeldBeyondBatch));
  }
  return impl_->pipeline_->batch(index, size(), [&](int64_t id, at::Tensor& out) {
    const int64_t c = impl_->index_->chunk_of(id);
    const auto it = std::lower_bound(wanted.begin(), wanted.end(), c);
    const std::shared_ptr<const std::string> bytes =
        (it != wanted.end() && *it == c) ? held[it - wanted.begin()] : load(c);
    const ShardIndex::Sample& s = impl_->index_->samples[id];
    ShardIndex::check(*bytes, impl_->index_->chunks[c].begin, s, impl_->shards_[s.shard],
                      is_url(impl_->shards_[s.shard]) && impl_->options_.cache_index()
                          ? kept_index_path(impl_->shards_[s.shard], impl_->options_)
                          : "");
    const std::string_view image(bytes->data() + (s.offset - impl_->index_->chunks[c].begin), s.size);
    impl_->pipeline_->render(image, impl_->shards_[s.shard] + ": " + s.key, std::nullopt, id, epoch, out);
    return static_cast<int64_t>(s.label);
  });
}

}  // namespace baton
