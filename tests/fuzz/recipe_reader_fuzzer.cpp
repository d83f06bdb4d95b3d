// The recipe reader as `baton train` uses it: a recipe file on disk (the bounded, regular-file read)
// with --set overrides (input lines starting "--set "), then every known key read as each type a
// recipe section asks for, with the one OptionReader. Only RecipeError may come out.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "baton/train/recipe_file.h"
#include "recipe_section.h"

namespace {

// Every typed getter on every key of `section`: errors are RecipeError or nothing.
void read_every_key(baton::OptionReader section, const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    try {
      (void)section.get<std::string>(key, "");
    } catch (const baton::RecipeError&) {
    }
    try {
      (void)section.get<int64_t>(key, 0);
    } catch (const baton::RecipeError&) {
    }
    try {
      (void)section.get<uint64_t>(key, 0);
    } catch (const baton::RecipeError&) {
    }
    try {
      (void)section.get<double>(key, 0.0);
    } catch (const baton::RecipeError&) {
    }
    try {
      (void)section.get<bool>(key, false);
    } catch (const baton::RecipeError&) {
    }
    try {
      (void)section.get<std::vector<int64_t>>(key, {});
    } catch (const baton::RecipeError&) {
    }
    try {
      (void)section.get<std::vector<std::string>>(key, {});
    } catch (const baton::RecipeError&) {
    }
    try {
      (void)section.time(key, baton::Time::from_epoch(1), true);
    } catch (const baton::RecipeError&) {
    }
    try {
      (void)section.get<std::vector<baton::Time>>(key, {});
    } catch (const baton::RecipeError&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> sets;
  while (text.rfind("--set ", 0) == 0) {
    const auto nl = text.find('\n');
    sets.push_back(text.substr(6, nl == std::string::npos ? std::string::npos : nl - 6));
    text = nl == std::string::npos ? "" : text.substr(nl + 1);
  }
  static const std::string path = "/tmp/baton_fuzz_recipe_" + std::to_string(::getpid()) + ".yaml";
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  namespace r = baton::recipe_detail;
  try {
    const baton::Recipe recipe = baton::Recipe::load(path, sets);
    const baton::OptionReader top = r::recipe_reader(recipe.root(), recipe.source(), recipe.set_keys());
    read_every_key(top, r::kTopKeys);
    read_every_key(top.child("data"), baton::data_keys());
    read_every_key(top.child("model"), r::kModelKeys);
    read_every_key(top.child("optimizer"), r::kOptimizerKeys);
    read_every_key(top.child("scheduler"), r::kSchedulerKeys);
  } catch (const baton::RecipeError&) {
  }
  return 0;
}
