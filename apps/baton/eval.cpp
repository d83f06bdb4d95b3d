// baton eval RECIPE.yaml --load MODEL.pt [--device DEVICE] [--set key=value]...
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "baton/core/device.h"
#include "baton/core/options.h"
#include "baton/core/precision.h"
#include "baton/io/text.h"
#include "baton/train/recipe.h"
#include "baton/train/weights_file.h"
#include "commands.h"

namespace baton::cli {
namespace {

struct EvalArgs {
  std::string recipe;
  std::vector<std::string> sets;
  std::string load;
  std::string device;
};

void run_eval(const EvalArgs& args) {
  const std::vector<std::string> sets = with_device(args.sets, args.device);
  check_weights_file(args.load);  // before the data is read
  TrainingRun run = build_run(Recipe::load(args.recipe, sets));
  if (!run.precision_chosen) run.options.precision(Precision::kFp32);  // outputs not rounded by `auto`
  if (!run.eval_data && run.eval_sets.empty()) {
    throw RecipeError(args.recipe + ": the recipe has no evaluation data (the data set's own, or an eval: section)");
  }
  const auto trainer = trainer_with_weights(run.options, args.load);
  for (const auto& [label, metrics] : trainer->eval()) {
    for (const auto& [name, value] : metrics) std::printf("%s/%s %.4f\n", label.c_str(), name.c_str(), value);
  }
}

}  // namespace

CLI::Validator finite_between(double least, double most) {
  const auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  const std::string range = "a number from " + number(least) + " to " + number(most);
  return CLI::Validator(
      [least, most, range](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < least || v > most) {
          return "expected " + range + ", got '" + one_line(text, 40) + "'";
        }
        return {};
      },
      range);
}

void add_device_option(CLI::App* cmd, std::string& device) {
  cmd->add_option("--device", device, "where to run: auto, cpu, cuda or cuda:N (default: the recipe's device)");
}

std::vector<std::string> with_device(std::vector<std::string> sets, const std::string& device) {
  if (device.empty()) return sets;
  try {
    parse_device(device);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("--device ") + e.what());
  }
  sets.push_back("device=" + device);
  return sets;
}

void add_eval(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "evaluate trained weights on a recipe's evaluation data");
  cmd->add_option("recipe", args->recipe, "recipe YAML file")->required();
  cmd->add_option("--load", args->load, "weights: RUN_DIR/model.pt, a checkpoint, or FILE.safetensors")->required();
  cmd->add_option("--set", args->sets, "override a recipe key: key.path=value (repeatable)");
  add_device_option(cmd, args->device);
  cmd->callback([args] { run_eval(*args); });
}

}  // namespace baton::cli
