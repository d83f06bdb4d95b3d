// Recipe: YAML text with --set overrides applied and every key checked (no LibTorch here; what a
// recipe builds is in recipe.h).
#pragma once

#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace YAML {
class Node;
}  // namespace YAML

namespace baton {

class RecipeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Recipe {
 public:
  // Reads `path` and applies `sets` ("key.path=value", the value read as YAML).
  static Recipe load(const std::string& path, const std::vector<std::string>& sets = {});
  // The same from YAML text (`source` names it in errors).
  static Recipe parse(const std::string& yaml, const std::string& source, const std::vector<std::string>& sets = {});

  Recipe(const Recipe&);
  Recipe& operator=(const Recipe&);
  ~Recipe();

  // The recipe after the overrides, as YAML.
  std::string resolved_yaml() const;
  const std::string& source() const;
  const YAML::Node& root() const;
  // The keys that --set gave (dotted paths).
  const std::set<std::string>& set_keys() const;
  // The files and folders it reads: the recipe file, and every value of `data`, `eval`, `model` and
  // `load_path` that names an existing file or folder (or a glob that matches some: token shards).
  // What a command writes must not be one of them (check_output).
  std::vector<std::string> input_files() const;

 private:
  Recipe();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
