// WebDataset's tar scanner on arbitrary bytes (tar_stream.h says what must hold).
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "tar_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    baton::fuzz::check_tar_stream(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const std::logic_error&) {
    std::abort();
  }
  return 0;
}
