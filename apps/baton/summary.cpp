// baton summary RECIPE.yaml [--set key=value]... [--json]: the model a recipe builds, as training
// prints it when it starts: its top-level modules, parameters, size and FLOPs per example.
#include <cstdio>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "baton/models/summary.h"
#include "baton/runs/train_recipe.h"
#include "baton/train/recipe.h"
#include "commands.h"

namespace baton::cli {

namespace {

struct SummaryArgs {
  std::string recipe;
  std::vector<std::string> sets;
  bool json = false;
};

void run_summary(const SummaryArgs& args) {
  const TrainingRun run = build_run(Recipe::load(args.recipe, args.sets));
  const ModelSummary summary = summarize_run(run);
  if (args.json) {
    nlohmann::json j = summary.to_json();
    j["model"] = run.model_name;
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("model %s\n%s", run.model_name.c_str(), summary.to_string().c_str());
}

}  // namespace

void add_summary(CLI::App& app) {
  auto args = std::make_shared<SummaryArgs>();
  CLI::App* cmd = app.add_subcommand("summary", "the model a recipe builds: its modules, parameters, size and FLOPs");
  cmd->add_option("recipe", args->recipe, "recipe YAML file")->required();
  cmd->add_option("--set", args->sets, "override a recipe key: key.path=value (repeatable)");
  cmd->add_flag("--json", args->json, "print it as JSON");
  cmd->callback([args] { run_summary(*args); });
}

}  // namespace baton::cli
