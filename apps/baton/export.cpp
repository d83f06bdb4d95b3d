// baton export CHECKPOINT --torchscript OUT.pt [--device DEVICE] [--recipe RECIPE.yaml [--set key=value]...]
#include <cstdio>
#include <filesystem>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "baton/core/device.h"
#include "baton/io/file.h"
#include "baton/io/write.h"
#include "baton/models/export.h"
#include "baton/models/safetensors.h"
#include "baton/models/zoo.h"
#include "baton/train/checkpoint.h"
#include "baton/train/recipe.h"
#include "baton/train/weights_file.h"
#include "commands.h"

namespace baton::cli {
namespace {

struct ExportArgs {
  std::string checkpoint;
  std::string torchscript;  // --torchscript FILE: --format torchscript --out FILE
  std::string format = "torchscript";
  std::string out;
  std::string recipe;
  std::vector<std::string> sets;
  std::string device = "cpu";
};

struct BuiltModel {
  std::shared_ptr<Model> model;
  std::vector<int64_t> input_shape;
  std::vector<std::shared_ptr<Algorithm>> algorithms;  // the recipe's: its model surgery applies
  int64_t vocab = 0;  // a language model's: its inputs are token ids below this (0: float inputs)
};

BuiltModel from_recipe(const Recipe& recipe) {
  TrainingRun run = build_run(recipe);
  const bool tokens = run.train_data->tokens_per_example() > 0;
  return {run.options.model(), run.model_spec.input_shape(), run.options.algorithms(),
          tokens ? run.model_spec.num_classes() : 0};
}

// An example input to trace the model with: token ids for a language model, else values.
at::Tensor example_input(const BuiltModel& built, c10::Device device) {
  std::vector<int64_t> shape = {2};
  shape.insert(shape.end(), built.input_shape.begin(), built.input_shape.end());
  torch::manual_seed(0);
  if (built.vocab > 0) return torch::randint(built.vocab, shape, torch::kLong).to(device);
  return torch::randn(shape).to(device);
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
                            .dropout(m.value("dropout", defaults.dropout()))
                            .mlp_ratio(m.value("mlp_ratio", defaults.mlp_ratio()))
                            .arch(m.value("arch", nlohmann::json()));
    const std::string name = m.value("name", "");
    if (name == "torchscript") return {load_torchscript_classifier(m.value("path", "")), spec.input_shape(), {}};
    const bool tokens = name.rfind("gpt", 0) == 0;  // gpt and gpt_space take token ids
    return {make_model(name, spec), spec.input_shape(), {}, tokens ? spec.num_classes() : 0};
  }
  if (ckpt.meta.contains("recipe") && ckpt.meta["recipe"].is_string()) {
    return from_recipe(Recipe::parse(ckpt.meta["recipe"].get<std::string>(), args.checkpoint + " (its recipe)",
                                     with_device({}, args.device)));
  }
  throw RecipeError(args.checkpoint + ": the checkpoint does not say which model it holds; pass --recipe RECIPE.yaml");
}

void run_export(ExportArgs args) {
  if (args.torchscript.empty() == args.out.empty()) {
    throw RecipeError("give --out FILE (with --format torchscript or safetensors) or --torchscript FILE, one of them");
  }
  if (!args.torchscript.empty()) {
    if (args.format != "torchscript") throw RecipeError("--torchscript writes TorchScript; with --format, use --out");
    args.out = args.torchscript;
  }
  const std::string flag = args.torchscript.empty() ? "--out" : "--torchscript";
  with_device({}, args.device);  // a device this machine has, before anything is read
  std::vector<std::string> inputs = {args.checkpoint, args.recipe};
  if (!args.recipe.empty()) {
    const auto read = Recipe::load(args.recipe, args.sets).input_files();
    inputs.insert(inputs.end(), read.begin(), read.end());
  }
  check_output(args.out, flag, inputs);  // not over an input, a device, a FIFO, a folder
  check_weights_file(args.checkpoint);
  const c10::Device device = parse_device(args.device);
  BuiltModel built = build_model(args);
  // The model as it was trained: surgery (the checkpoint's, the recipe's) applied, then the weights,
  // on the device the exported module's tensors are to live on.
  const auto trainer = trainer_with_weights(
      TrainerOptions().model(built.model).algorithms(built.algorithms).device(device), args.checkpoint);
  if (args.format == "safetensors") {
    // The network's own names (a zoo ResNet's are torchvision's): loads with safetensors.torch.load_file.
    const NamedTensors tensors = model_tensors(*built.model);
    write_safetensors(args.out, tensors, {{"format", "pt"}, {"producer", "baton"}});
    std::printf("exported %s to %s (safetensors, %zu tensors)\n", args.checkpoint.c_str(), args.out.c_str(),
                tensors.size());
    return;
  }
  const std::string bytes = export_torchscript(*built.model, example_input(built, device));
  write_file_atomically(args.out, bytes);
  std::printf("exported %s to %s (TorchScript, %zu bytes, input [N, %s)\n", args.checkpoint.c_str(), args.out.c_str(),
              bytes.size(), c10::str(at::IntArrayRef(built.input_shape)).substr(1).c_str());
}

}  // namespace

void add_export(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "export", "the trained model as TorchScript (torch.jit.load in Python or C++) or its weights as safetensors");
  cmd->add_option("checkpoint", args->checkpoint, "a checkpoint (or model.pt with --recipe)")->required();
  cmd->add_option("--torchscript", args->torchscript, "the TorchScript file to write (--format torchscript --out)");
  cmd->add_option("--format", args->format, "torchscript (the traced model) or safetensors (the weights)")
      ->check(CLI::IsMember({"torchscript", "safetensors"}))
      ->capture_default_str();
  cmd->add_option("--out", args->out, "the file to write");
  cmd->add_option("--recipe", args->recipe, "build the model from this recipe instead of the checkpoint's");
  cmd->add_option("--set", args->sets, "override a recipe key (with --recipe): key.path=value (repeatable)");
  cmd->add_option("--device", args->device, "where the exported module's tensors live: cpu (default), cuda or cuda:N");
  cmd->callback([args] { run_export(*args); });
}

}  // namespace baton::cli
