// Recipes: a training run described in YAML, with --set overrides, checked key by key.
//
//   baton::Recipe recipe = baton::Recipe::load("recipes/fashion_mnist.yaml", {"optimizer.lr=0.1"});
//   baton::TrainingRun run = baton::build_run(recipe);
//   baton::Trainer trainer(run.options);
//
// Every key is known: an unknown key, a value of the wrong type or a bad name is a RecipeError
// whose message starts with where it came from ("recipes/x.yaml:12:7: optimizer.lr: ..." or
// "--set optimizer.lr: ..."). The keys are listed in docs/recipes.md.
#pragma once

#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "baton/train/trainer.h"

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
  const std::string& source() const { return source_; }
  const YAML::Node& root() const;
  // The keys that --set gave (dotted paths).
  const std::set<std::string>& set_keys() const { return set_keys_; }

 private:
  Recipe();
  std::string source_;
  std::unique_ptr<YAML::Node> root_;
  std::set<std::string> set_keys_;
};

// What a recipe builds: the trainer's options and the data it holds.
struct TrainingRun {
  TrainerOptions options;
  std::string model_name;
  std::shared_ptr<Dataset> train_data;
  std::shared_ptr<Dataset> eval_data;
};

// Reads the data, builds the model, optimizer and scheduler. Throws RecipeError for a bad value,
// std::runtime_error for data that cannot be read.
TrainingRun build_run(const Recipe& recipe);

}  // namespace baton
