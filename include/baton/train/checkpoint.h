// Checkpoint files: a StateDict and its metadata, written so that a crash at any moment leaves
// the previous checkpoint intact, and read so that a damaged file is recognised, not loaded.
//
//   baton::write_checkpoint("checkpoints/ep1-ba468.ckpt", state_dict, {{"recipe", yaml}});
//   baton::CheckpointFile ckpt = baton::read_checkpoint("checkpoints/latest");
//
// Layout (little-endian):
//   0  "BATONCK\0"                    magic
//   8  u32 format version (1)
//   12 u32 CRC-32 of every byte after the 24-byte header
//   16 u64 number of bytes after the header
//   24 u32 metadata length, metadata (JSON), then the tensors' bytes back to back
// The metadata holds the StateDict's values, each tensor's name, dtype, shape, offset and size,
// and whatever the writer adds (baton version, recipe, metrics).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "baton/core/state_dict.h"
#include "baton/train/checkpoint_error.h"

namespace baton {

struct CheckpointFile {
  StateDict state;
  // The metadata the writer added (baton_version, recipe, metrics, …).
  nlohmann::json meta = nlohmann::json::object();
  // The tensors' descriptions: [{"name", "dtype", "shape", "nbytes"}].
  nlohmann::json tensors = nlohmann::json::array();
};

// Serialises `state` (tensors copied to contiguous CPU memory) with `meta` into bytes.
std::string encode_checkpoint(const StateDict& state, const nlohmann::json& meta);
// The inverse; `name` is used in error messages. Throws CheckpointError.
CheckpointFile decode_checkpoint(const std::string& bytes, const std::string& name);

void write_checkpoint(const std::string& path, const StateDict& state, const nlohmann::json& meta);
// Throws CheckpointError for a missing, empty, truncated, corrupt or foreign file.
CheckpointFile read_checkpoint(const std::string& path);
// Only the metadata the writer added (no tensors read, no checksum over them: for listing and
// ranking checkpoints). Throws CheckpointError for a file that is not a checkpoint.
nlohmann::json read_checkpoint_meta(const std::string& path);

// One file from a checkpoint of either format (save_format: sharded: the ranks' files of the
// optimizer's state joined): what one process resumes from, inspects or exports. `from` is the
// checkpoint, or a checkpoint folder (its latest good one); returns the checkpoint read. Throws
// CheckpointError for a missing, damaged or incomplete checkpoint, or an existing `to` (nothing is
// overwritten).
std::string consolidate_checkpoint(const std::string& from, const std::string& to);

// SHA-256 over the tensors named "model/…" in name order (their bytes): equal for equal weights.
std::string weights_sha256(const StateDict& state);
// SHA-256 of bytes, as 64 hex digits.
std::string sha256_hex(const std::string& bytes);

}  // namespace baton
