// The search-space reader on arbitrary text (YAML, and JSON as YAML reads it): it either throws
// std::invalid_argument, or gives a space whose every sample it contains.
#include <cstdint>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>

#include "baton/exec/space.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json definition = baton::SearchSpace::parse_text(text, /*json=*/false, "fuzz");
    const baton::SearchSpace space = baton::SearchSpace::from_json(definition, "fuzz");
    std::mt19937_64 rng(7);
    for (int i = 0; i < 4; ++i) {
      if (!space.contains(space.sample(rng))) std::abort();
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
