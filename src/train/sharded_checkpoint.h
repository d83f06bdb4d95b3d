// Checkpoints written in a file a rank (save_format: sharded; private to train). Beside the index —
// the checkpoint file itself, written last by rank 0, holding what no shard holds (buffers, the
// loop's state) — each rank writes `<index>.rank<R>-of-<N>`: its shards of the parameters the
// optimizers step and of their state. The index's value "sharded_optimizer_state" says how they
// join: the ranks, an id both carry, and each chunk's shard length, parameters (name, shape), state
// names and whether its weights are in the shards (checkpoints of before hold them in the index).
//
// read_checkpoint() joins them (every rank's file must be there, whole, and carry the index's id),
// so that whatever reads a checkpoint — inspect, export, consolidate, a resume — sees the whole model
// ("model/<parameter>") and optimizer state ("optimizer_state/<optimizer>/<parameter>/<state>"). A
// sharded run resuming takes the weights so, and each rank reads only its block of the optimizer's
// state from the files that hold it (ShardedCheckpoint): never the whole state in one process.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/train/checkpoint.h"

namespace baton::detail {

inline constexpr const char* kShardedStateKey = "sharded_optimizer_state";
inline constexpr const char* kOptimizerStatePrefix = "optimizer_state/";

// `index`'s file of rank `rank` of `ranks`.
std::string optimizer_shard_path(const std::string& index, int rank, int ranks);

// The ranks' files of a sharded checkpoint, read a range at a time.
class ShardedCheckpoint {
 public:
  // Checks every rank's file: there, whole (its checksum, read through once in pieces), this
  // checkpoint's (the index's id and its rank), holding the tensors the layout names. Throws
  // CheckpointError naming the file and what is wrong.
  ShardedCheckpoint(const std::string& index, const nlohmann::json& layout);
  ~ShardedCheckpoint();
  ShardedCheckpoint(const ShardedCheckpoint&) = delete;
  ShardedCheckpoint& operator=(const ShardedCheckpoint&) = delete;

  // A parameter: its chunk, where it starts in the chunk, its shape and elements.
  struct Param {
    std::size_t chunk = 0;
    int64_t offset = 0;
    int64_t numel = 0;
    std::vector<int64_t> shape;
  };
  // Every parameter, by optimizer and name.
  const std::map<std::pair<int, std::string>, Param>& params() const;
  // Whether the files hold the parameter's weights (those of before held them in the index), and
  // the names of its state ("step" among them for Adam).
  bool has_weights(const Param& p) const;
  std::vector<std::string> states(const Param& p) const;
  // Elements [start, start + n) of the parameter's weights ("weights") or state, flattened, read
  // from the files that hold them; "step": its chunk's step count.
  at::Tensor read(const Param& p, const std::string& key, int64_t start, int64_t n) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The whole parameters (and, with `state`, the whole optimizer state) into `ckpt`, read from
// `index`, from its ranks' files; the reader of the files. Throws CheckpointError.
std::shared_ptr<ShardedCheckpoint> join_shards(const std::string& index, CheckpointFile& ckpt, bool state);
// read_checkpoint(), and of a sharded checkpoint, with `state`, its optimizer state joined; without,
// only its weights, the reader in `shards` (left empty for a checkpoint of one file).
CheckpointFile read_checkpoint(const std::string& path, bool state, std::shared_ptr<ShardedCheckpoint>* shards);
// A checkpoint's values, the file (and a sharded one's ranks' files) checked as read_checkpoint
// checks them, without reading a tensor. Throws CheckpointError.
nlohmann::json checked_checkpoint_values(const std::string& path);
// Deletes a checkpoint: the index first (so it is no longer one), then its ranks' files.
void remove_checkpoint(const std::string& index);
// Deletes the ranks' files in `folder` whose index is not there (a save killed before rank 0 wrote
// it); returns how many.
int remove_orphan_shards(const std::string& folder);

}  // namespace baton::detail
