// baton export CHECKPOINT --torchscript OUT.pt [--device DEVICE] [--recipe RECIPE.yaml [--set key=value]...]
#include <cstdio>
#include <filesystem>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "baton/core/device.h"
#include "baton/io/file.h"
#include "baton/models/export.h"
#include "baton/models/zoo.h"
#include "baton/train/checkpoint.h"
#include "baton/train/recipe.h"
#include "commands.h"

namespace baton::cli {
namespace {

struct ExportArgs {
  std::string checkpoint;
  std::string torchscript;
  std::string recipe;
  std::vector<std::string> sets;
  std::string device = "cpu";
};

struct BuiltModel {
  std::shared_ptr<Model> model;
  std::vector<int64_t> input_shape;
  std::vector<std::shared_ptr<Algorithm>> algorithms;  // the recipe's: its model surgery applies
};

BuiltModel from_recipe(const Recipe& recipe) {
  TrainingRun run = build_run(recipe);
  return {run.options.model(), run.model_spec.input_shape(), run.options.algorithms()};
}

// The model the checkpoint was trained with: from --recipe, else from what baton train wrote
// into the checkpoint (the model's name and shapes; the recipe, which needs the data, when a
// checkpoint has only that).
BuiltModel build_model(const ExportArgs& args) {
  if (!args.recipe.empty()) return from_recipe(Recipe::load(args.recipe, with_device(args.sets, args.device)));
  if (!is_checkpoint(args.checkpoint)) {
    check_weights_file(args.checkpoint);  // names what is wrong with a file that is not one
    throw RecipeError(args.checkpoint +
                      ": not a baton checkpoint, so it does not say which model it holds; pass --recipe RECIPE.yaml");
  }
  const CheckpointFile ckpt = read_checkpoint(args.checkpoint);
  if (ckpt.meta.contains("model") && ckpt.meta["model"].is_object()) {
    const nlohmann::json& m = ckpt.meta["model"];
    const ModelOptions defaults;
    ModelOptions spec = ModelOptions()
                            .input_shape(m.value("input_shape", std::vector<int64_t>{}))
                            .num_classes(m.value("num_classes", int64_t{10}))
                            .hidden(m.value("hidden", defaults.hidden()))
                            .layers(m.value("layers", defaults.layers()))
                            .width(m.value("width", defaults.width()))
                            .heads(m.value("heads", defaults.heads()))
                            .dropout(m.value("dropout", defaults.dropout()));
    const std::string name = m.value("name", "");
    if (name == "torchscript") return {load_torchscript_classifier(m.value("path", "")), spec.input_shape(), {}};
    return {make_model(name, spec), spec.input_shape(), {}};
  }
  if (ckpt.meta.contains("recipe") && ckpt.meta["recipe"].is_string()) {
    return from_recipe(Recipe::parse(ckpt.meta["recipe"].get<std::string>(), args.checkpoint + " (its recipe)",
                                     with_device({}, args.device)));
  }
  throw RecipeError(args.checkpoint + ": the checkpoint does not say which model it holds; pass --recipe RECIPE.yaml");
}

void run_export(const ExportArgs& args) {
  with_device({}, args.device);  // a device this machine has, before anything is read
  std::error_code ec;
  if (std::filesystem::weakly_canonical(args.torchscript, ec) ==
      std::filesystem::weakly_canonical(args.checkpoint, ec)) {
    throw RecipeError("--torchscript " + args.torchscript + " is the file the model is read from; name another file");
  }
  check_write_target(args.torchscript, "--torchscript");  // not over a device, a FIFO or a folder
  check_weights_file(args.checkpoint);
  const c10::Device device = parse_device(args.device);
  BuiltModel built = build_model(args);
  // The model as it was trained: surgery (the checkpoint's, the recipe's) applied, then the weights,
  // on the device the exported module's tensors are to live on.
  const auto trainer = trainer_with_weights(
      TrainerOptions().model(built.model).algorithms(built.algorithms).device(device), args.checkpoint);
  std::vector<int64_t> shape = {2};
  shape.insert(shape.end(), built.input_shape.begin(), built.input_shape.end());
  torch::manual_seed(0);
  const std::string bytes = export_torchscript(*built.model, torch::randn(shape).to(device));
  write_file_atomically(args.torchscript, bytes);
  std::printf("exported %s to %s (TorchScript, %zu bytes, input [N, %s)\n", args.checkpoint.c_str(),
              args.torchscript.c_str(), bytes.size(), c10::str(at::IntArrayRef(built.input_shape)).substr(1).c_str());
}

}  // namespace

void add_export(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand("export", "the trained model as TorchScript (torch.jit.load in Python or C++)");
  cmd->add_option("checkpoint", args->checkpoint, "a checkpoint (or model.pt with --recipe)")->required();
  cmd->add_option("--torchscript", args->torchscript, "the TorchScript file to write")->required();
  cmd->add_option("--recipe", args->recipe, "build the model from this recipe instead of the checkpoint's");
  cmd->add_option("--set", args->sets, "override a recipe key (with --recipe): key.path=value (repeatable)");
  cmd->add_option("--device", args->device, "where the exported module's tensors live: cpu (default), cuda or cuda:N");
  cmd->callback([args] { run_export(*args); });
}

}  // namespace baton::cli
