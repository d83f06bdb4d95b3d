// The checkpoint file's layout, parsed and checked without LibTorch (so that the parser can be
// fuzzed on its own). Private to src/train; checkpoint.cpp builds tensors from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/train/checkpoint_error.h"

namespace baton {

// A CheckpointError "<name>: <why>" (name: the file, or the part of it that is wrong).
[[noreturn]] inline void checkpoint_fail(const std::string& name, const std::string& why) {
  throw CheckpointError(name + ": " + why);
}

inline constexpr char kCheckpointMagic[8] = {'B', 'A', 'T', 'O', 'N', 'C', 'K', '\0'};
inline constexpr std::size_t kCheckpointHeader = 24;

struct TensorEntry {
  std::string name;
  std::string dtype;  // "float32", "int64", … (see dtype_size)
  std::vector<int64_t> shape;
  std::size_t offset = 0;  // from the start of the data
  std::size_t nbytes = 0;
};

struct CheckpointLayout {
  nlohmann::json meta;  // the metadata without "tensors"
  std::vector<TensorEntry> tensors;
  std::size_t data_start = 0;  // where the tensors' bytes begin in the file
};

// Bytes per element of a checkpoint dtype name; 0 for an unknown name.
std::size_t dtype_size(const std::string& dtype);
uint32_t checkpoint_crc(const char* data, std::size_t size, uint32_t crc = 0);

// Checks magic, version, length, CRC, metadata and that every tensor fits its bytes.
// Throws CheckpointError("<name>: …").
CheckpointLayout parse_checkpoint_layout(const std::string& bytes, const std::string& name);
// The same for a file of `size` bytes read through `read(offset, n, out)` (n bytes at offset into
// out): the checksum taken over pieces of it, so that it is never whole in memory.
using ReadAt = std::function<void(std::size_t offset, std::size_t n, char* out)>;
// `n` bytes of the open file `fd` at `offset` into `out` (pread, again after a short read); throws
// CheckpointError "<name>: cannot be read" when the file ends or fails first.
void read_exactly(int fd, std::size_t offset, std::size_t n, char* out, const std::string& name);
CheckpointLayout parse_checkpoint_layout(std::size_t size, const ReadAt& read, const std::string& name);

}  // namespace baton
