// The IDX reader on arbitrary bytes: it either throws std::runtime_error or returns a layout whose
// elements lie exactly inside the bytes.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "array_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const baton::ArrayLayout layout = baton::parse_idx_layout(data, size);
    std::size_t count = 1;
    for (int64_t d : layout.shape) count *= static_cast<std::size_t>(d);
    if (count != layout.count || layout.offset + layout.count * layout.element != size) std::abort();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
