// baton eval RECIPE.yaml --load MODEL.pt [--device DEVICE] [--set key=value]...
#include <cstdio>
#include <fstream>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "baton/core/device.h"
#include "baton/train/checkpoint.h"
#include "baton/train/recipe.h"
#include "commands.h"

namespace baton::cli {
namespace {

void copy_tensor(const StateDict& state, const std::string& path, const std::string& name, at::Tensor target) {
  auto it = state.tensors.find("model/" + name);
  if (it == state.tensors.end())
    throw std::runtime_error(path + ": cannot load the model's weights: no tensor 'model/" + name + "'");
  if (it->second.sizes() != target.sizes()) {
    throw std::runtime_error(path + ": cannot load the model's weights: 'model/" + name + "' has shape " +
                             c10::str(it->second.sizes()) + ", the model's is " + c10::str(target.sizes()));
  }
  target.copy_(it->second);
}

struct EvalArgs {
  std::string recipe;
  std::vector<std::string> sets;
  std::string load;
  std::string device;
};

void run_eval(const EvalArgs& args) {
  TrainingRun run = build_run(Recipe::load(args.recipe, with_device(args.sets, args.device)));
  if (!run.eval_data) throw RecipeError(args.recipe + ": the recipe has no evaluation data");
  load_weights(run, args.load);
  Trainer trainer(run.options.progress_bar(false).console_log_interval("0ep"));
  for (const auto& [label, metrics] : trainer.eval()) {
    for (const auto& [name, value] : metrics) std::printf("%s/%s %.4f\n", label.c_str(), name.c_str(), value);
  }
}

}  // namespace

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

void load_weights(TrainingRun& run, const std::string& path) {
  load_weights(*std::dynamic_pointer_cast<torch::nn::Module>(run.options.model()), path);
}

void load_weights(torch::nn::Module& target, const std::string& path) {
  std::shared_ptr<torch::nn::Module> module(&target, [](torch::nn::Module*) {});  // torch::load takes a pointer
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, sizeof magic);
  if (!in) throw std::runtime_error(path + ": cannot read the weights");
  if (std::string(magic, 7) == "BATONCK") {
    const CheckpointFile ckpt = read_checkpoint(path);
    torch::NoGradGuard no_grad;
    for (auto& item : module->named_parameters()) copy_tensor(ckpt.state, path, item.key(), item.value());
    for (auto& item : module->named_buffers()) copy_tensor(ckpt.state, path, item.key(), item.value());
    return;
  }
  try {
    torch::load(module, path);
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw std::runtime_error(path + ": cannot load the model's weights: " + what.substr(0, what.find('\n')));
  }
}

void add_eval(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "evaluate trained weights on a recipe's evaluation data");
  cmd->add_option("recipe", args->recipe, "recipe YAML file")->required();
  cmd->add_option("--load", args->load, "weights written by baton train (RUN_DIR/model.pt)")->required();
  cmd->add_option("--set", args->sets, "override a recipe key: key.path=value (repeatable)");
  add_device_option(cmd, args->device);
  cmd->callback([args] { run_eval(*args); });
}

}  // namespace baton::cli
