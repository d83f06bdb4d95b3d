// baton train RECIPE.yaml [--set key=value]... [--run-dir DIR] [--autoresume | --overwrite]
// The command's flags; what it does is train_recipe (include/baton/runs/train_recipe.h).
#include <memory>

#include <CLI/CLI.hpp>

#include "baton/runs/train_recipe.h"
#include "commands.h"

namespace baton::cli {

void add_train(CLI::App& app) {
  auto args = std::make_shared<TrainRequest>();
  CLI::App* cmd = app.add_subcommand("train", "train a model from a recipe");
  cmd->add_option("recipe", args->recipe, "recipe YAML file")->required();
  cmd->add_option("--set", args->sets, "override a recipe key: key.path=value (repeatable)");
  cmd->add_option("--run-dir", args->run_dir, "where the run writes its files (default: runs/<run_name>)");
  cmd->add_flag(
      "--autoresume", args->autoresume,
      "resume from the run's checkpoints/latest if it is good (else the newest good checkpoint, else load_path)");
  cmd->add_flag("--overwrite,--restart", args->overwrite,
                "start over in a run folder that holds a run: its files (and checkpoints) are moved to "
                "RUN_DIR/replaced-<time>/, not deleted");
  cmd->add_flag("--profile", args->profile,
                "record batches 2-6 as a Chrome trace in RUN_DIR/traces (open in chrome://tracing or Perfetto)");
  cmd->callback([args] {
    if (const int code = train_recipe(*args, run_link_from_environment()); code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace baton::cli
