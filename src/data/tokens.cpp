#include "baton/data/tokens.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <memory>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/io/file.h"
#include "baton/io/write.h"

namespace baton {
namespace {

constexpr std::size_t kHeaderBytes = kTokenShardHeaderInts * sizeof(int32_t);
// A shard's count is an int32: at most 2^31 - 1 tokens (4 GiB of uint16, 8 GiB of uint32).
constexpr uint64_t kMaxShardBytes = kHeaderBytes + (uint64_t{1} << 33);
// Tokens read whole when the data set opens, to find one outside the vocabulary before a run
// starts (8 GiB of them: seconds); beyond, as windows are read.
constexpr int64_t kCheckedAtOpen = int64_t{1} << 32;

std::string errno_text() { return std::strerror(errno); }

// Each shard keeps a descriptor open: the soft limit on open files raised (to the hard one) when a
// corpus has that many shards.
void allow_open_files(std::size_t shards) {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= shards + 256) return;
  limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, shards + 256);
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

std::int64_t modified_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

struct TokenShard::Impl {
  std::string path_;
  int fd_ = -1;  // kept open
  int64_t count_ = 0;
  int64_t token_bytes_ = 2;
  std::int64_t modified_ns_ = 0;

  uint64_t file_bytes() const { return kHeaderBytes + static_cast<uint64_t>(count_ * token_bytes_); }
};

const std::string& TokenShard::path() const { return impl_->path_; }
int64_t TokenShard::size() const { return impl_->count_; }
int64_t TokenShard::token_bytes() const { return impl_->token_bytes_; }

TokenShard::TokenShard(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path_ = path;
  std::array<int32_t, kTokenShardHeaderInts> header{};
  uint64_t size = 0;
  {
    ReadableFile file(path, {.what = "the token shard", .max_bytes = kMaxShardBytes});
    size = file.size();
    if (size < kHeaderBytes) {
      throw std::runtime_error(path + ": " + std::to_string(size) + " bytes, shorter than a token shard's header (" +
                               std::to_string(kHeaderBytes) + " bytes): not a token shard");
    }
    if (::pread(file.fd(), header.data(), kHeaderBytes, 0) != static_cast<ssize_t>(kHeaderBytes)) {
      throw std::runtime_error(path + ": cannot read the header: " + errno_text());
    }
    const bool wide = header[0] == kTokenShardMagic32;
    if (header[0] != kTokenShardMagic && !wide) {
      throw std::runtime_error(path + ": magic " + std::to_string(header[0]) +
                               ", not a token shard (llm.c's magics are " + std::to_string(kTokenShardMagic) +
                               " for uint16 tokens and " + std::to_string(kTokenShardMagic32) + " for uint32)");
    }
    const int32_t version = wide ? kTokenShardVersion32 : kTokenShardVersion;
    if (header[1] != version) {
      throw std::runtime_error(path + ": version " + std::to_string(header[1]) + " (" + (wide ? "uint32" : "uint16") +
                               " tokens are version " + std::to_string(version) + ")");
    }
    impl_->token_bytes_ = wide ? 4 : 2;
    impl_->count_ = std::max<int64_t>(header[2], 0);
    const uint64_t expected = impl_->file_bytes();
    if (header[2] < 0 || expected != size) {
      throw std::runtime_error(path + ": the header counts " + std::to_string(header[2]) + " tokens (" +
                               std::to_string(expected) + " bytes) but the file has " + std::to_string(size) +
                               " bytes: cut short or not a token shard");
    }
    struct stat st {};
    ::fstat(file.fd(), &st);
    impl_->modified_ns_ = modified_ns(st);
    impl_->fd_ = file.release();  // kept: the shard's windows are read through it, two system calls a window
  }
}

TokenShard::~TokenShard() {
  if (impl_->fd_ >= 0) ::close(impl_->fd_);
}

void TokenShard::read(int64_t start, int64_t count, uint32_t* out) const {
  if (start < 0 || count < 0 || start + count > impl_->count_) {
    throw std::out_of_range(impl_->path_ + ": tokens " + std::to_string(start) + " to " +
                            std::to_string(start + count) + " of " + std::to_string(impl_->count_));
  }
  // The file opened first, as it is now: cut short or rewritten in place is an error (a memory map
  // would have been a SIGBUS); replaced by a rename, the file opened goes on being read whole.
  struct stat st {};
  const uint64_t expected = impl_->file_bytes();
  const bool same = ::fstat(impl_->fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) == expected &&
                    modified_ns(st) == impl_->modified_ns_;
  // uint16 tokens are read into the second half of `out` and widened in place, front to back.
  const int64_t width = impl_->token_bytes_;
  std::size_t got = 0;
  const std::size_t want = static_cast<std::size_t>(count * width);
  auto* bytes = reinterpret_cast<char*>(out) + (width == 2 ? want : 0);
  while (same && got < want) {
    const ssize_t n = ::pread(impl_->fd_, bytes + got, want - got,
                              static_cast<off_t>(kHeaderBytes + static_cast<uint64_t>(start * width) + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (!same || got < want) {
    throw std::runtime_error(impl_->path_ + ": the token shard changed while it was read (now " +
                             std::to_string(st.st_size) + " bytes, was " + std::to_string(expected) +
                             (same                                            ? ""
                              : static_cast<uint64_t>(st.st_size) == expected ? ", rewritten"
                                                                              : "") +
                             "): a shard must not change under a run; restore it and resume");
  }
  if (width == 2) {
    for (int64_t i = 0; i < count; ++i) {  // out[i] covers only tokens already read (i < count)
      uint16_t token = 0;
      std::memcpy(&token, bytes + 2 * i, sizeof token);
      out[i] = token;
    }
  }
}

namespace {

template <typename T>
void write_shard(const std::string& path, const std::vector<T>& tokens, int32_t magic, int32_t version) {
  if (tokens.size() > static_cast<std::size_t>(INT32_MAX)) {
    throw std::invalid_argument(path + ": " + std::to_string(tokens.size()) +
                                " tokens are more than a shard holds (2^31 - 1): write several shards");
  }
  std::string bytes(kHeaderBytes + tokens.size() * sizeof(T), '\0');
  std::array<int32_t, kTokenShardHeaderInts> header{};
  header[0] = magic;
  header[1] = version;
  header[2] = static_cast<int32_t>(tokens.size());
  std::memcpy(bytes.data(), header.data(), kHeaderBytes);
  std::memcpy(bytes.data() + kHeaderBytes, tokens.data(), tokens.size() * sizeof(T));
  write_file_atomically(path, bytes);
}

}  // namespace

void write_token_shard(const std::string& path, const std::vector<uint16_t>& tokens) {
  write_shard(path, tokens, kTokenShardMagic, kTokenShardVersion);
}

void write_token_shard(const std::string& path, const std::vector<uint32_t>& tokens) {
  write_shard(path, tokens, kTokenShardMagic32, kTokenShardVersion32);
}

std::vector<std::string> expand_globs(const std::vector<std::string>& patterns, const std::string& what) {
  std::vector<std::string> files;
  for (const std::string& pattern : patterns) {
    glob_t found{};
    const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &found);
    std::size_t matched = 0;
    if (rc == 0) {
      for (std::size_t i = 0; i < found.gl_pathc; ++i) {
        const std::string file = found.gl_pathv[i];
        if (file_kind(file) != "a regular file") continue;  // folders, FIFOs and dangling links: not shards
        files.push_back(file);
        ++matched;
      }
    }
    ::globfree(&found);
    if (matched == 0) {
      std::string why = what;
      why += ": '" + pattern + "' matches no regular file" + where_relative(pattern);
      throw std::runtime_error(why);
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

struct TokenDataset::Impl {
  TokenOptions options_;
  std::vector<std::shared_ptr<TokenShard>> shards_;
  std::vector<int64_t> first_window_;  // per shard: the index of its first window; then the total
  int64_t windows_ = 0;
};

TokenDataset::TokenDataset() : impl_(std::make_unique<Impl>()) {}
TokenDataset::~TokenDataset() = default;

int64_t TokenDataset::size() const { return impl_->windows_; }
std::vector<int64_t> TokenDataset::input_shape() const { return {impl_->options_.context()}; }
int64_t TokenDataset::tokens_per_example() const { return impl_->options_.context(); }
int64_t TokenDataset::num_classes() const { return impl_->options_.vocab_size(); }
const std::vector<std::shared_ptr<TokenShard>>& TokenDataset::shards() const { return impl_->shards_; }

std::shared_ptr<TokenDataset> TokenDataset::open(const std::vector<std::string>& files, const TokenOptions& options) {
  if (options.context() < 1 || options.context() > (int64_t{1} << 24)) {
    throw OptionError("context", "expected a window of 1 to 16777216 tokens, got " + std::to_string(options.context()));
  }
  if (options.vocab_size() < 0 || options.vocab_size() > INT32_MAX) {
    throw OptionError("vocab_size",
                      "expected 1 to 2147483647, or 0 to count them, got " + std::to_string(options.vocab_size()));
  }
  std::shared_ptr<TokenDataset> data(new TokenDataset());
  data->impl_->options_ = options;
  allow_open_files(files.size());
  int64_t total = 0;
  for (const std::string& file : files) {
    auto shard = std::make_shared<TokenShard>(file);
    data->impl_->first_window_.push_back(data->impl_->windows_);
    data->impl_->windows_ += std::max<int64_t>(0, (shard->size() - 1) / options.context());
    total += shard->size();
    data->impl_->shards_.push_back(std::move(shard));
  }
  // One pass over the tokens: the vocabulary's size when not given, else a token at or above it
  // found now (before a run is made) rather than mid-run; a corpus too large for a pass at start
  // is checked as its windows are read.
  int64_t largest = -1;
  if (options.vocab_size() == 0 || total <= kCheckedAtOpen) {
    std::vector<uint32_t> block(1 << 20);
    for (const auto& shard : data->impl_->shards_) {
      for (int64_t at = 0; at < shard->size(); at += static_cast<int64_t>(block.size())) {
        const int64_t n = std::min<int64_t>(static_cast<int64_t>(block.size()), shard->size() - at);
        shard->read(at, n, block.data());
        const auto end = block.begin() + n;
        const auto top = std::max_element(block.begin(), end);
        if (options.vocab_size() > 0 && *top >= options.vocab_size()) {  // the first such token named
          const auto bad = std::find_if(block.begin(), end, [&](uint32_t t) { return t >= options.vocab_size(); });
          throw std::runtime_error(shard->path() + ": token " + std::to_string(*bad) + " at position " +
                                   std::to_string(at + (bad - block.begin())) + " is not below vocab_size " +
                                   std::to_string(options.vocab_size()));
        }
        largest = std::max<int64_t>(largest, *top);
      }
    }
  }
  data->impl_->first_window_.push_back(data->impl_->windows_);
  if (data->impl_->windows_ == 0) {
    throw std::invalid_argument("no shard of " + std::to_string(files.size()) + " holds a window of " +
                                std::to_string(options.context()) + " tokens and its next token (" +
                                std::to_string(data->tokens()) + " tokens in all): lower context");
  }
  if (options.vocab_size() == 0) data->impl_->options_.vocab_size(largest + 1);
  return data;
}

int64_t TokenDataset::tokens() const {
  int64_t n = 0;
  for (const auto& s : impl_->shards_) n += s->size();
  return n;
}

Batch TokenDataset::get_epoch_batch(const at::Tensor& indices, int64_t epoch) const {
  const at::Tensor idx = indices.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t n = idx.numel();
  const int64_t t = impl_->options_.context();
  at::Tensor windows = torch::empty({n, t + 1}, torch::kLong);
  const int64_t* want = idx.data_ptr<int64_t>();
  int64_t* out = windows.data_ptr<int64_t>();
  const auto vocab = static_cast<uint32_t>(impl_->options_.vocab_size() - 1);
  std::vector<uint32_t> window(static_cast<std::size_t>(t + 1));
  for (int64_t e = 0; e < n; ++e) {
    const int64_t i = want[e];
    if (i < 0 || i >= impl_->windows_) {
      throw std::out_of_range("window " + std::to_string(i) + " of " + std::to_string(impl_->windows_));
    }
    const auto s =
        static_cast<std::size_t>(std::upper_bound(impl_->first_window_.begin(), impl_->first_window_.end(), i) -
                                 impl_->first_window_.begin() - 1);
    const TokenShard& shard = *impl_->shards_[s];
    int64_t start = (i - impl_->first_window_[s]) * t;
    if (impl_->options_.random_offsets()) {
      const int64_t room = std::min<int64_t>(t - 1, shard.size() - 1 - t - start);  // stays in the shard
      if (room > 0) start += ExampleRng(impl_->options_.seed(), epoch, i).below(room + 1);
    }
    shard.read(start, t + 1, window.data());
    const uint32_t* from = window.data();
    int64_t* row = out + e * (t + 1);
    for (int64_t k = 0; k <= t; ++k) {
      if (from[k] > vocab) {
        throw std::runtime_error(shard.path() + ": token " + std::to_string(from[k]) + " at position " +
                                 std::to_string(start + k) + " is not below vocab_size " +
                                 std::to_string(impl_->options_.vocab_size()));
      }
      row[k] = from[k];
    }
  }
  Batch batch;
  batch.input = windows.slice(1, 0, t).contiguous();
  batch.target = windows.slice(1, 1).contiguous();
  return batch;
}

}  // namespace baton
