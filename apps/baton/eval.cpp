// baton eval RECIPE.yaml --load MODEL.pt [--device DEVICE] [--set key=value]...
// (the library call: evaluate_recipe, include/baton/runs/model_commands.h)
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "baton/io/text.h"
#include "baton/runs/model_commands.h"
#include "commands.h"

namespace baton::cli {

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

void add_eval(CLI::App& app) {
  auto request = std::make_shared<EvalRequest>();
  CLI::App* cmd = app.add_subcommand("eval", "evaluate trained weights on a recipe's evaluation data");
  cmd->add_option("recipe", request->recipe, "recipe YAML file")->required();
  cmd->add_option("--load", request->weights, "weights: RUN_DIR/model.pt, a checkpoint, or FILE.safetensors")
      ->required();
  cmd->add_option("--set", request->sets, "override a recipe key: key.path=value (repeatable)");
  add_device_option(cmd, request->device);
  cmd->callback([request] {
    for (const auto& [label, metrics] : evaluate_recipe(*request)) {
      for (const auto& [name, value] : metrics) std::printf("%s/%s %.4f\n", label.c_str(), name.c_str(), value);
    }
  });
}

}  // namespace baton::cli
