#include "train/sharded_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>
#include <vector>

#include <torch/torch.h>

#include "baton/io/file.h"
#include "baton/train/checkpoint_saver.h"
#include "train/checkpoint_layout.h"

namespace baton::detail {
namespace {

namespace fs = std::filesystem;

void add(CheckpointFile& ckpt, const std::string& name, const at::Tensor& t) {
  ckpt.state.tensors[name] = t;
  ckpt.tensors.push_back({{"name", name},
                          {"dtype", t.scalar_type() == at::kLong ? "int64" : "float32"},
                          {"shape", t.sizes().vec()},
                          {"nbytes", t.numel() * static_cast<int64_t>(t.element_size())}});
}

CheckpointError layout_error(const std::string& index) {
  return CheckpointError(std::string(index).append(": its sharded state's layout does not add up"));
}

// Elements of a shape, or -1 when they are more than `most` (or the shape is not one).
int64_t elements(const std::vector<int64_t>& shape, int64_t most) {
  int64_t numel = shape.size() <= 8 ? 1 : -1;
  for (const int64_t d : shape) numel = d < 0 || numel < 0 || (d > 0 && numel > most / d) ? -1 : numel * d;
  return numel;
}

}  // namespace

// One rank's file: where each tensor's bytes are.
struct RankFile {
  std::string path;
  std::unique_ptr<ReadableFile> file;
  std::map<std::string, TensorEntry> tensors;
  std::size_t data_start = 0;
};

struct ShardedCheckpoint::Impl {
  std::string index;
  std::vector<RankFile> files;
  nlohmann::json chunks;
  std::vector<int64_t> shards;  // per chunk: elements a file holds
  std::map<std::pair<int, std::string>, Param> params;

  void open(int r, int ranks, const std::string& id);
  void read_layout();
  // `n` elements (of `bytes` each) of a file's tensor `key` from element `start`, into `out`.
  void read_elements(const RankFile& f, const std::string& key, int64_t start, int64_t n, std::size_t bytes,
                     char* out) const;
};

void ShardedCheckpoint::Impl::open(int r, int ranks, const std::string& id) {
  RankFile f;
  f.path = optimizer_shard_path(index, r, ranks);
  std::error_code ec;
  if (!fs::exists(f.path, ec)) {
    throw CheckpointError(std::string(index)
                              .append(": rank ")
                              .append(std::to_string(r))
                              .append("'s file, ")
                              .append(f.path)
                              .append(", is missing (a sharded checkpoint needs the files of all ")
                              .append(std::to_string(ranks))
                              .append(" ranks)"));
  }
  try {
    f.file = std::make_unique<ReadableFile>(f.path, ReadOptions{.what = "a checkpoint", .max_bytes = 1ull << 40});
  } catch (const FileError& e) {
    throw CheckpointError(e.what());
  }
  const int fd = f.file->fd();
  const std::string& path = f.path;
  const CheckpointLayout layout = parse_checkpoint_layout(
      f.file->size(),
      [fd, &path](std::size_t offset, std::size_t n, char* out) { read_exactly(fd, offset, n, out, path); }, f.path);
  const nlohmann::json values = layout.meta.value("values", nlohmann::json::object());
  if (values.value("id", "") != id || values.value("rank", -1) != r) {
    throw CheckpointError(std::string(f.path)
                              .append(": is not rank ")
                              .append(std::to_string(r))
                              .append("'s file of ")
                              .append(index)
                              .append(" (another checkpoint's id); the checkpoint cannot be resumed from"));
  }
  f.data_start = layout.data_start;
  for (const TensorEntry& e : layout.tensors) f.tensors[e.name] = e;
  files.push_back(std::move(f));
}

// The chunks' parameters, checked against what every file holds.
void ShardedCheckpoint::Impl::read_layout() {
  const auto ranks = static_cast<int64_t>(files.size());
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const nlohmann::json& chunk = chunks[k];
    const int64_t shard = chunk.at("shard").get<int64_t>();
    if (shard < 0 || shard > (int64_t{1} << 40) / ranks) throw layout_error(index);
    shards.push_back(shard);
    std::vector<std::string> keys;
    for (const auto& state : chunk.at("state")) keys.push_back(state.get<std::string>());
    if (chunk.value("weights", false)) keys.emplace_back("weights");
    for (const auto& key : keys) {
      const std::string name = "chunks/" + std::to_string(k) + "/" + key;
      const std::size_t bytes = key == "step" ? 8 : 4;
      const int64_t numel = key == "step" ? 1 : shard;
      for (const RankFile& f : files) {
        const auto it = f.tensors.find(name);
        if (it == f.tensors.end() || it->second.nbytes != static_cast<std::size_t>(numel) * bytes ||
            it->second.dtype != (key == "step" ? "int64" : "float32")) {
          throw CheckpointError(std::string(f.path)
                                    .append(": has no ")
                                    .append(std::to_string(numel))
                                    .append("-element tensor '")
                                    .append(name)
                                    .append("' (written by another run, or damaged?)"));
        }
      }
    }
    int64_t at = 0;
    for (const auto& param : chunk.at("params")) {
      Param p{k, at, 0, param.at(1).get<std::vector<int64_t>>()};
      p.numel = elements(p.shape, shard * ranks);
      if (p.numel < 0 || at + p.numel > shard * ranks) throw layout_error(index);
      params[{chunk.at("optimizer").get<int>(), param.at(0).get<std::string>()}] = p;
      at += p.numel;
    }
  }
}

void ShardedCheckpoint::Impl::read_elements(const RankFile& f, const std::string& key, int64_t start, int64_t n,
                                            std::size_t bytes, char* out) const {
  const TensorEntry& e = f.tensors.at(key);
  const auto offset = f.data_start + e.offset + static_cast<std::size_t>(start) * bytes;
  const auto size = static_cast<std::size_t>(n) * bytes;
  read_exactly(f.file->fd(), offset, size, out, f.path);
}

ShardedCheckpoint::ShardedCheckpoint(const std::string& index, const nlohmann::json& layout)
    : impl_(std::make_unique<Impl>()) {
  impl_->index = index;
  const int ranks = layout.at("ranks").get<int>();
  if (ranks < 1 || ranks > 1 << 20) {
    throw CheckpointError(
        std::string(index).append(": its sharded state has ").append(std::to_string(ranks)).append(" ranks"));
  }
  const std::string id = layout.at("id").get<std::string>();
  for (int r = 0; r < ranks; ++r) impl_->open(r, ranks, id);
  impl_->chunks = layout.at("chunks");
  impl_->read_layout();
}

ShardedCheckpoint::~ShardedCheckpoint() = default;

const std::map<std::pair<int, std::string>, ShardedCheckpoint::Param>& ShardedCheckpoint::params() const {
  return impl_->params;
}

bool ShardedCheckpoint::has_weights(const Param& p) const { return impl_->chunks[p.chunk].value("weights", false); }

std::vector<std::string> ShardedCheckpoint::states(const Param& p) const {
  return impl_->chunks[p.chunk].at("state").get<std::vector<std::string>>();
}

at::Tensor ShardedCheckpoint::read(const Param& p, const std::string& key, int64_t start, int64_t n) const {
  const std::string name = "chunks/" + std::to_string(p.chunk) + "/" + key;
  if (key == "step") {
    at::Tensor step = torch::empty({}, torch::kLong);
    impl_->read_elements(impl_->files[0], name, 0, 1, sizeof(int64_t), static_cast<char*>(step.data_ptr()));
    return step;
  }
  if (start < 0 || n < 0 || start + n > p.numel) throw layout_error(impl_->index);
  at::Tensor out = torch::empty({n}, torch::kFloat);
  auto* to = static_cast<char*>(out.data_ptr());
  const int64_t shard = impl_->shards[p.chunk];
  for (int64_t e = p.offset + start, end = e + n; e < end;) {  // the files the range falls in
    const int64_t file = e / shard, within = e % shard, take = std::min(end - e, shard - within);
    impl_->read_elements(impl_->files[static_cast<std::size_t>(file)], name, within, take, sizeof(float), to);
    to += take * static_cast<int64_t>(sizeof(float));
    e += take;
  }
  return out;
}

std::string optimizer_shard_path(const std::string& index, int rank, int ranks) {
  const fs::path path(index);
  const fs::path name = fs::is_symlink(path) ? fs::read_symlink(path).filename() : path.filename();
  return (path.parent_path() / (name.string() + ".rank" + std::to_string(rank) + "-of-" + std::to_string(ranks)))
      .string();
}

std::shared_ptr<ShardedCheckpoint> join_shards(const std::string& index, CheckpointFile& ckpt, bool state) {
  auto shards = std::make_shared<ShardedCheckpoint>(index, ckpt.state.values.at(kShardedStateKey));
  for (const auto& [key, p] : shards->params()) {
    const std::string& name = key.second;
    if (shards->has_weights(p)) add(ckpt, "model/" + name, shards->read(p, "weights", 0, p.numel).view(p.shape));
    if (!state) continue;
    for (const auto& s : shards->states(p)) {
      const std::string target = std::string(kOptimizerStatePrefix)
                                     .append(std::to_string(key.first))
                                     .append("/")
                                     .append(name)
                                     .append("/")
                                     .append(s);
      add(ckpt, target, s == "step" ? shards->read(p, s, 0, 1) : shards->read(p, s, 0, p.numel).view(p.shape));
    }
  }
  if (state) ckpt.state.values.erase(kShardedStateKey);  // whole now: a file written from it is one file
  return shards;
}

}  // namespace baton::detail

namespace baton {

std::string consolidate_checkpoint(const std::string& from, const std::string& to) {
  std::error_code ec;
  std::string source = from;
  if (std::filesystem::is_directory(from, ec)) {
    source = find_resumable_checkpoint(from);
    if (source.empty()) throw CheckpointError(from + ": holds no checkpoint");
  }
  if (std::filesystem::exists(to, ec)) {
    throw CheckpointError(to + ": exists; consolidate writes a new file (choose another --out, or remove it)");
  }
  const CheckpointFile ckpt = read_checkpoint(source);
  write_checkpoint(to, ckpt.state, ckpt.meta);
  return source;
}

}  // namespace baton

namespace baton::detail {

int remove_orphan_shards(const std::string& folder) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    const auto at = name.rfind(".rank");
    if (at == std::string::npos || name.find("-of-", at) == std::string::npos) continue;
    if (!fs::exists(entry.path().parent_path() / name.substr(0, at), ec) && fs::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

void remove_checkpoint(const std::string& index) {
  std::error_code ec;
  fs::remove(index, ec);
  const fs::path path(index);
  const std::string prefix = path.filename().string() + ".rank";
  for (const auto& entry : fs::directory_iterator(path.parent_path().empty() ? "." : path.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) fs::remove(entry.path(), ec);
  }
}

}  // namespace baton::detail
