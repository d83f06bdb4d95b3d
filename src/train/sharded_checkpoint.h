// Checkpoints written in a file a rank (save_format: sharded; private to train). Beside the index —
// the checkpoint file itself, written last by rank 0, holding what no shard holds (buffers, the
// loop's state) — each rank writes `<index>.rank<R>-of-<N>`: its shards of the parameters the
// optimizers step and of their state. The index's value "sharded_optimizer_state" says how they
// join: the ranks, an id both carry, and each chunk's shard length, parameters (name, shape), state
// names and whether its weights are in the shards (checkpoints of before hold them in the index).
//
// read_checkpoint() joins them (every rank's file must be there and carry the index's id), so that
// whatever reads a checkpoint — a resume on any number of ranks, inspect, export, consolidate — sees
// the whole model ("model/<parameter>") and optimizer state ("optimizer_state/<optimizer>/<parameter>/
// <state>").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "baton/train/checkpoint.h"

namespace baton::detail {

inline constexpr const char* kShardedStateKey = "sharded_optimizer_state";
inline constexpr const char* kOptimizerStatePrefix = "optimizer_state/";

// `index`'s file of rank `rank` of `ranks`.
std::string optimizer_shard_path(const std::string& index, int rank, int ranks);
// The whole parameters and optimizer state into `ckpt` (read from `index`) from its ranks' files.
// Throws CheckpointError naming a missing, damaged or foreign rank file.
void join_shards(const std::string& index, CheckpointFile& ckpt);
// Deletes a checkpoint: the index first (so it is no longer one), then its ranks' files.
void remove_checkpoint(const std::string& index);
// Deletes the ranks' files in `folder` whose index is not there (a save killed before rank 0 wrote
// it); returns how many.
int remove_orphan_shards(const std::string& folder);

}  // namespace baton::detail
