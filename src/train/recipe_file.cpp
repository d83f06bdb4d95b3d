#include "baton/train/recipe_file.h"

#include <glob.h>
#include <memory>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "baton/io/file.h"
#include "core/yaml_json.h"
#include "recipe_section.h"

namespace baton {

using recipe_detail::kModelKeys;
using recipe_detail::kOptimizerKeys;
using recipe_detail::kSchedulerKeys;
using recipe_detail::kTopKeys;
using recipe_detail::recipe_reader;

struct Recipe::Impl {
  std::string source_;
  std::unique_ptr<YAML::Node> root_;
  std::set<std::string> set_keys_;
};

const std::string& Recipe::source() const { return impl_->source_; }
const std::set<std::string>& Recipe::set_keys() const { return impl_->set_keys_; }

Recipe::Recipe() : impl_(std::make_unique<Impl>()) { impl_->root_ = std::make_unique<YAML::Node>(); }
Recipe::Recipe(const Recipe& other) : impl_(std::make_unique<Impl>()) {
  impl_->source_ = other.impl_->source_;
  impl_->root_ = std::make_unique<YAML::Node>(YAML::Clone(*other.impl_->root_));
}
Recipe& Recipe::operator=(const Recipe& other) {
  impl_->source_ = other.impl_->source_;
  impl_->root_ = std::make_unique<YAML::Node>(YAML::Clone(*other.impl_->root_));
  return *this;
}
Recipe::~Recipe() = default;

const YAML::Node& Recipe::root() const { return *impl_->root_; }

std::vector<std::string> Recipe::input_files() const {
  std::vector<std::string> out;
  if (!impl_->source_.empty() && std::filesystem::is_regular_file(impl_->source_)) out.push_back(impl_->source_);
  const auto walk = [&](const auto& self, const YAML::Node& node, int depth) -> void {
    if (depth > 32) return;
    if (node.IsMap()) {
      for (const auto& item : node) self(self, item.second, depth + 1);
    } else if (node.IsSequence()) {
      for (const auto& item : node) self(self, item, depth + 1);
    } else if (node.IsScalar()) {
      const std::string& text = node.Scalar();
      if (text.empty() || text.size() > 4096 || text.find('\n') != std::string::npos) return;
      std::error_code ec;
      if (std::filesystem::exists(text, ec)) {
        out.push_back(text);
      } else if (text.find_first_of("*?[") != std::string::npos) {  // a glob: the files it matches
        glob_t found{};
        if (::glob(text.c_str(), 0, nullptr, &found) == 0) {
          for (std::size_t i = 0; i < found.gl_pathc && i < 100000; ++i) out.emplace_back(found.gl_pathv[i]);
        }
        ::globfree(&found);
      }
    }
  };
  const YAML::Node& root = *impl_->root_;  // const: reading a key never adds it
  if (!root.IsMap()) return out;
  for (const char* key : {"data", "eval", "model", "load_path"}) {  // not save_folder or a profiler's: outputs
    if (root[key]) walk(walk, root[key], 0);
  }
  return out;
}

namespace {

constexpr std::uint64_t kMaxRecipeBytes = 4u << 20;  // a recipe is a few KiB

std::string position(const std::string& source, const YAML::Mark& mark) {
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// yaml-cpp keeps both entries of a key written twice, and reads the first where a dump shows the
// last: a duplicate is an error, naming both lines.
void refuse_duplicate_keys(const YAML::Node& node, const std::string& source, const std::string& path) {
  if (node.IsSequence()) {
    for (const auto& item : node) refuse_duplicate_keys(item, source, path);
  }
  if (!node.IsMap()) return;
  std::map<std::string, YAML::Mark> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) continue;
    const std::string key = it->first.Scalar();
    const std::string full = path.empty() ? key : std::string(path).append(".").append(key);
    const auto [first, fresh] = seen.emplace(key, it->first.Mark());
    if (!fresh) {
      throw RecipeError(position(source, it->first.Mark()) + ": key '" + full + "' is given twice (first at line " +
                        std::to_string(first->second.line + 1) + "); keep one");
    }
    refuse_duplicate_keys(it->second, source, full);
  }
}

}  // namespace

Recipe Recipe::load(const std::string& path, const std::vector<std::string>& sets) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw RecipeError(path + ": a folder, not a recipe file (recipes/fashion_mnist.yaml is one)");
  }
  try {
    return parse(read_file(path, {.what = "the recipe", .max_bytes = kMaxRecipeBytes}), path, sets);
  } catch (const FileError& e) {
    throw RecipeError(e.what());
  }
}

Recipe Recipe::parse(const std::string& yaml, const std::string& source, const std::vector<std::string>& sets) {
  Recipe recipe;
  recipe.impl_->source_ = source;
  try {
    *recipe.impl_->root_ = load_yaml(yaml, source);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(e.what());
  }
  YAML::Node& root = *recipe.impl_->root_;
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw RecipeError(source + ": a recipe is a mapping of keys to values");
  refuse_duplicate_keys(root, source, "");
  for (const std::string& set : sets) {
    const auto eq = set.find('=');
    if (eq == std::string::npos || eq == 0)
      throw RecipeError("--set " + set + ": expected key=value, e.g. optimizer.lr=0.1");
    const std::string key = set.substr(0, eq);
    YAML::Node value;
    try {
      value = load_yaml(set.substr(eq + 1), "--set " + key);
    } catch (const std::invalid_argument& e) {
      throw RecipeError(e.what());
    }
    // Walk to the parent mapping, creating sections that are missing.
    std::vector<std::string> parts;
    std::stringstream ss(key);
    for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
    if (parts.empty() || std::any_of(parts.begin(), parts.end(), [](const auto& p) { return p.empty(); })) {
      throw RecipeError("--set " + set + ": expected a key such as optimizer.lr (names joined by single dots)");
    }
    YAML::Node node = root;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node next = node[parts[i]];
      if (!next.IsDefined() || next.IsNull()) next = YAML::Node(YAML::NodeType::Map);
      if (!next.IsMap()) throw RecipeError("--set " + key + ": '" + parts[i] + "' is not a section");
      node[parts[i]] = next;
      node.reset(next);
    }
    node[parts.back()] = value;
    recipe.impl_->set_keys_.insert(key);
  }
  try {
    check_yaml_bounds(root, source);  // --set values may alias nothing, but may nest
  } catch (const std::invalid_argument& e) {
    throw RecipeError(e.what());
  }
  // Check every key now, so that a typo fails before any data is read.
  try {
    const OptionReader top = recipe_reader(root, recipe.impl_->source_, recipe.impl_->set_keys_);
    top.check_keys(kTopKeys);
    top.child("data").check_keys(data_keys());
    top.child("model").check_keys(kModelKeys);
    top.child("optimizer").check_keys(kOptimizerKeys);
    top.child("scheduler").check_keys(kSchedulerKeys);
  } catch (const YAML::Exception& e) {
    throw RecipeError(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": cannot read the recipe: " + e.msg);
  }
  return recipe;
}

std::string Recipe::resolved_yaml() const {
  YAML::Emitter out;
  out << *impl_->root_;
  return std::string(out.c_str()) + "\n";
}

}  // namespace baton
