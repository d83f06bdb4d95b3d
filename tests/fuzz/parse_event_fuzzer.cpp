// parse_event on arbitrary bytes: it either throws std::invalid_argument or returns the event
// whose string is the input.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "baton/core/event.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    if (baton::to_string(baton::parse_event(text)) != text) std::abort();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
