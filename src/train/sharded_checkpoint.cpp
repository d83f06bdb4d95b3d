#include "train/sharded_checkpoint.h"

#include <filesystem>
#include <map>
#include <system_error>
#include <vector>

#include <torch/torch.h>

#include "baton/train/checkpoint_saver.h"

namespace baton::detail {
namespace {

namespace fs = std::filesystem;

// The shards of one chunk of every rank's file, joined: the whole (padded) vector of `state`.
at::Tensor join(const std::vector<CheckpointFile>& files, const std::string& key, int64_t shard,
                const std::string& index) {
  std::vector<at::Tensor> parts;
  parts.reserve(files.size());
  for (std::size_t r = 0; r < files.size(); ++r) {
    const auto it = files[r].state.tensors.find(key);
    if (it == files[r].state.tensors.end() || it->second.numel() != shard) {
      throw CheckpointError(optimizer_shard_path(index, static_cast<int>(r), static_cast<int>(files.size()))
                                .append(": has no ")
                                .append(std::to_string(shard))
                                .append("-element tensor '")
                                .append(key)
                                .append("' (written by another run, or damaged?)"));
    }
    parts.push_back(it->second.reshape({-1}));
  }
  return torch::cat(parts);
}

void add(CheckpointFile& ckpt, const std::string& name, const at::Tensor& t) {
  ckpt.state.tensors[name] = t;
  ckpt.tensors.push_back({{"name", name},
                          {"dtype", t.scalar_type() == at::kLong ? "int64" : "float32"},
                          {"shape", t.sizes().vec()},
                          {"nbytes", t.numel() * static_cast<int64_t>(t.element_size())}});
}

// A chunk's joined vector `whole` (`length` elements, padding included) cut into its parameters'
// tensors, each put in `ckpt` under `name(parameter)`.
template <typename Name>
void split(const at::Tensor& whole, const nlohmann::json& chunk, int64_t length, const std::string& index, Name name,
           CheckpointFile& ckpt) {
  const auto bad = [&] { return CheckpointError(std::string(index).append(": its sharded state's layout does not add up")); };
  int64_t at = 0;
  for (const auto& param : chunk.at("params")) {
    const auto shape = param.at(1).get<std::vector<int64_t>>();
    int64_t numel = shape.size() <= 8 ? 1 : -1;  // within the chunk, or -1
    for (const int64_t d : shape) numel = d < 0 || numel < 0 || (d > 0 && numel > length / d) ? -1 : numel * d;
    if (numel < 0 || at + numel > length || at + numel > whole.numel()) throw bad();
    add(ckpt, name(param.at(0).get<std::string>()), whole.narrow(0, at, numel).view(shape).clone());
    at += numel;
  }
}

}  // namespace

std::string optimizer_shard_path(const std::string& index, int rank, int ranks) {
  const fs::path path(index);
  const fs::path name = fs::is_symlink(path) ? fs::read_symlink(path).filename() : path.filename();
  return (path.parent_path() / (name.string() + ".rank" + std::to_string(rank) + "-of-" + std::to_string(ranks)))
      .string();
}

void join_shards(const std::string& index, CheckpointFile& ckpt) {
  const nlohmann::json layout = ckpt.state.values.at(kShardedStateKey);
  const int ranks = layout.at("ranks").get<int>();
  const std::string id = layout.at("id").get<std::string>();
  if (ranks < 1 || ranks > 1 << 20) {
    throw CheckpointError(
        std::string(index).append(": its sharded state has ").append(std::to_string(ranks)).append(" ranks"));
  }
  std::vector<CheckpointFile> files;
  files.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const std::string path = optimizer_shard_path(index, r, ranks);
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      throw CheckpointError(std::string(index)
                                .append(": rank ")
                                .append(std::to_string(r))
                                .append("'s file of the optimizer state, ")
                                .append(path)
                                .append(", is missing (a sharded checkpoint needs the files of all ")
                                .append(std::to_string(ranks))
                                .append(" ranks)"));
    }
    files.push_back(read_checkpoint(path));
    if (files.back().state.values.value("id", "") != id || files.back().state.values.value("rank", -1) != r) {
      throw CheckpointError(std::string(path)
                                .append(": is not rank ")
                                .append(std::to_string(r))
                                .append("'s file of ")
                                .append(index)
                                .append(" (another checkpoint's id); the checkpoint cannot be resumed from"));
    }
  }
  const nlohmann::json& chunks = layout.at("chunks");
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const nlohmann::json& chunk = chunks[k];
    const int64_t shard = chunk.at("shard").get<int64_t>();
    if (shard < 0 || shard > (int64_t{1} << 40)) {
      throw CheckpointError(std::string(index).append(": its sharded state's layout does not add up"));
    }
    const std::string key = "chunks/" + std::to_string(k) + "/";
    const std::string optimizer = std::to_string(chunk.at("optimizer").get<int>());
    if (chunk.value("weights", false)) {
      split(join(files, key + "weights", shard, index), chunk, shard * ranks, index,
            [](const std::string& param) { return "model/" + param; }, ckpt);
    }
    for (const auto& state : chunk.at("state")) {
      const std::string name = state.get<std::string>();
      const auto target = [&](const std::string& param) {
        return std::string(kOptimizerStatePrefix).append(optimizer).append("/").append(param).append("/").append(name);
      };
      if (name != "step") {
        split(join(files, key + name, shard, index), chunk, shard * ranks, index, target, ckpt);
        continue;
      }
      const at::Tensor step = join(files, key + name, 1, index)[0];  // every rank has it
      for (const auto& param : chunk.at("params")) add(ckpt, target(param.at(0).get<std::string>()), step.clone());
    }
  }
  ckpt.state.values.erase(kShardedStateKey);  // whole now: a file written from it is one file
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
