// Checkpoints whose optimizer state is in a file a rank (save_format: sharded; private to train).
// Beside the index — the checkpoint file itself, written last by rank 0, holding the weights and all
// the rest — each rank writes `<index>.rank<R>-of-<N>`: its shards of the optimizer's state. The
// index's value "sharded_optimizer_state" says how they join: the ranks, an id both carry, the
// files, and each chunk's shard length, parameters (name, shape) and state names.
//
// read_checkpoint() joins them (every rank's file must be there and carry the index's id), so that
// whatever reads a checkpoint — a resume on any number of ranks, inspect, export, consolidate — sees
// the whole optimizer state, as tensors "optimizer_state/<optimizer>/<parameter>/<state>".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "baton/train/checkpoint.h"

namespace baton::detail {

inline constexpr const char* kShardedStateKey = "sharded_optimizer_state";
inline constexpr const char* kOptimizerStatePrefix = "optimizer_state/";

// `index`'s file of rank `rank` of `ranks`.
std::string optimizer_shard_path(const std::string& index, int rank, int ranks);
// The whole optimizer state into `ckpt` (read from `index`) from its ranks' files. Throws
// CheckpointError naming a missing, damaged or foreign rank file.
void join_optimizer_shards(const std::string& index, CheckpointFile& ckpt);
// Deletes a checkpoint: the index first (so it is no longer one), then its ranks' files.
void remove_checkpoint(const std::string& index);
// Deletes the ranks' files in `folder` whose index is not there (a save killed before rank 0 wrote
// it); returns how many.
int remove_orphan_shards(const std::string& folder);

}  // namespace baton::detail
