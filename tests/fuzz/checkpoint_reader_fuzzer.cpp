// The checkpoint reader on arbitrary bytes: it either throws CheckpointError or returns a layout
// whose every tensor lies inside the file.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "checkpoint_layout.h"

namespace {

void check(const std::string& bytes) {
  try {
    const baton::CheckpointLayout layout = baton::parse_checkpoint_layout(bytes, "fuzz");
    for (const auto& t : layout.tensors) {
      if (layout.data_start + t.offset + t.nbytes > bytes.size()) std::abort();
    }
  } catch (const baton::CheckpointError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  check(bytes);
  // Again with the header's length and checksum made right, to reach the metadata checks.
  if (bytes.size() >= baton::kCheckpointHeader) {
    const uint64_t length = bytes.size() - baton::kCheckpointHeader;
    const uint32_t crc = baton::checkpoint_crc(bytes.data() + baton::kCheckpointHeader, length);
    std::memcpy(&bytes[12], &crc, sizeof crc);
    std::memcpy(&bytes[16], &length, sizeof length);
    check(bytes);
  }
  return 0;
}
