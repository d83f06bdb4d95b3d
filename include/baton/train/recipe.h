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
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/models/zoo.h"
#include "baton/train/fused.h"
#include "baton/train/recipe_file.h"
#include "baton/train/trainer.h"

namespace baton {

// What a recipe builds: the trainer's options and the data it holds.
// The checkpoints a recipe keeps when it does not say (save_num_checkpoints_to_keep): the newest 3.
inline constexpr int kRecipeCheckpointsKept = 3;

struct TrainingRun {
  TrainerOptions options;
  std::string model_name;
  // What the model was built from (for an export without the data): the zoo's spec, or for
  // model.name torchscript, the file.
  ModelOptions model_spec;
  std::string model_path;
  // The recipe's `loggers:` (csv, jsonl, tensorboard write into the run directory; mlflow sends
  // the run) with their options, and whether `callbacks: {checkpoint_saver: false}` turned
  // checkpoints off.
  std::vector<std::pair<std::string, nlohmann::json>> loggers;
  bool checkpoints = true;
  // fast_dev_run: batches of training and of each evaluation set; 0 when off. baton train then
  // writes nothing (no run folder, checkpoint or logger file).
  int64_t fast_dev_run = 0;
  // Whether the recipe names its precision (else `auto` chose it: bfloat16 where the device has it,
  // for training; eval and predict then compute in fp32, so no output is rounded by a precision the
  // user never chose).
  bool precision_chosen = false;
  // The layout of images and 4-d weights: channels_last or contiguous (memory_format, resolved).
  std::string memory_format = "contiguous";
  std::shared_ptr<Dataset> train_data;
  std::shared_ptr<Dataset> eval_data;
  // The `eval:` section's sets by name (evaluated as "eval/NAME"), in the recipe's order.
  std::vector<std::pair<std::string, std::shared_ptr<Dataset>>> eval_sets;
  // A fused trial's: the streams of batches it shares with the others (null: its own).
  FusedData::Streams shared_batches;
};

// Reads the data, builds the model, optimizer and scheduler. Throws RecipeError for a bad value,
// std::runtime_error for data that cannot be read. A fused trial's (`fused` given) data sets and
// training batches are those it shares with the other trials of its process (fused.h).
TrainingRun build_run(const Recipe& recipe, FusedData* fused = nullptr);

// The zoo's spec the recipe's model would be built from (its input shape and outputs from the
// data, which this reads; its model keys), building nothing: what a search makes a model space
// from. Throws as build_run does.
ModelOptions recipe_model_spec(const Recipe& recipe);

// The checked options of the recipe's `loggers: {NAME: {...}}` (nullopt when it names no such
// logger): what a search's own MLflow run is made with. Throws RecipeError for a bad option.
std::optional<nlohmann::json> recipe_logger_options(const Recipe& recipe, const std::string& name);

}  // namespace baton
