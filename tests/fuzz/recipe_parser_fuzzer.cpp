// The recipe parser on arbitrary text: it either throws RecipeError or returns a recipe whose
// resolved YAML parses again.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "baton/train/recipe_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const baton::Recipe recipe = baton::Recipe::parse(text, "fuzz.yaml");
    try {
      baton::Recipe::parse(recipe.resolved_yaml(), "resolved.yaml");
    } catch (const baton::RecipeError&) {
      std::abort();  // what the parser accepted and wrote back must parse
    }
  } catch (const baton::RecipeError&) {
  }
  return 0;
}
