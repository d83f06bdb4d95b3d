// Time::parse on arbitrary bytes: it either throws std::invalid_argument or returns a Time whose
// to_string() parses back to the same Time.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "baton/core/time.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const baton::Time t = baton::Time::parse(text);
    if (baton::Time::parse(t.to_string()) != t) std::abort();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
