// RunFolder: a training run's folder (RUN_DIR), as `baton train` keeps it, for any program.
//
//   baton::RunFolder::check_against_inputs("runs/exp1", recipe.input_files());
//   auto folder = baton::RunFolder::claim("runs/exp1");  // an OS lock: one process trains here
//   folder.prepare({.existing = baton::RunFolder::Existing::kResume, .recipe_yaml = recipe.resolved_yaml(),
//                   .save_folder = ..., .save_filename = ...});
//   ... train ...
//   nlohmann::json metrics = folder.finish(trainer);  // model.pt and summary.json, atomically
//
// A folder that already holds a run is continued (kResume), started over with the old files moved
// into RUN_DIR/replaced-<time>/ (kStartOver), or refused (kRefuse): nothing is ever deleted. A run
// refused before it started leaves no folder it made (release_refused).
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "baton/io/run_dir.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace baton {

class Trainer;

class RunFolder {
 public:
  // What to do with a run already in the folder.
  enum class Existing {
    kRefuse,     // refuse, saying how to continue or start over
    kResume,     // continue it from its checkpoints (--autoresume); see prepare
    kStartOver,  // move its files (and its checkpoints kept elsewhere) aside, then start (--overwrite)
  };
  struct Prepare {
    Existing existing = Existing::kRefuse;
    std::string recipe_yaml{};    // the run's resolved recipe (a resume of another recipe is refused)
    std::string save_folder{};    // where the run's checkpoints go ("" : none)
    std::string save_filename{};  // their names' pattern (another pattern's checkpoints are not resumed)
    std::FILE* out = stdout;      // where a move aside is said
  };

  // Refuses (RecipeError) a run folder that is one of `inputs` (a recipe's files and data folders,
  // Recipe::input_files) or inside one: its checkpoints would become data.
  static void check_against_inputs(const std::filesystem::path& dir, const std::vector<std::string>& inputs);
  // Makes `dir` when missing and holds it by an OS lock (RUN_DIR/.lock, released when the process
  // ends however it ends). Throws RecipeError for a file there or a folder another process holds
  // (naming its pid); removes temporaries that killed writers left.
  static RunFolder claim(const std::filesystem::path& dir);

  RunFolder();
  RunFolder(RunFolder&&) noexcept;
  RunFolder& operator=(RunFolder&&) noexcept;
  ~RunFolder();

  // What a run already there becomes (see Existing). kResume where there is nothing of this recipe
  // to resume from: a run killed before its first checkpoint (same recipe) starts over with its
  // files moved aside; a finished run, other checkpoints or another recipe's run are refused
  // (RecipeError), since starting over would replace them.
  void prepare(const Prepare& how);
  // A run refused before training: the folder goes when this claim made it (everything in it is
  // this process's), and the lock is released.
  void release_refused();

  // The files of the accepted run, written atomically: the resolved recipe, the class names.
  void write_recipe(const std::string& resolved_yaml) const;
  void write_classes(const std::vector<std::string>& names) const;
  // After training: model.pt (the trainer's model, torch::save) and summary.json (the metrics of
  // its last evaluations and train/loss, the times, steps, samples/s, graph steps, whether it
  // stopped early). Returns the metrics ("eval/accuracy": 0.91, ...).
  nlohmann::json finish(Trainer& trainer) const;

  const std::filesystem::path& path() const;
  RunDir files() const { return RunDir(path()); }
  bool held() const;  // claimed and not released

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Moves `names` of `folder` into folder/replaced-<time>/ (nothing is deleted); returns that folder.
std::filesystem::path move_aside(const std::filesystem::path& folder, const std::vector<std::string>& names);

}  // namespace baton
