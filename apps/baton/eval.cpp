// baton eval RECIPE.yaml --load MODEL.pt [--device DEVICE] [--set key=value]...
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "baton/core/device.h"
#include "baton/core/options.h"
#include "baton/core/precision.h"
#include "baton/io/file.h"
#include "baton/io/text.h"
#include "baton/models/safetensors.h"
#include "baton/train/checkpoint.h"
#include "baton/train/recipe.h"
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

namespace {

// The first bytes of a weights file (a regular file: never a FIFO, which would wait forever).
std::string magic_of(const std::string& path, std::size_t n) {
  ReadableFile file(path, {.what = "the weights", .max_bytes = UINT64_MAX});
  std::string magic(n, '\0');
  const ssize_t got = ::pread(file.fd(), magic.data(), n, 0);
  magic.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return magic;
}

}  // namespace

bool is_checkpoint(const std::string& path) {
  try {
    return magic_of(path, 7) == "BATONCK";
  } catch (const FileError&) {
    return false;
  }
}

std::unique_ptr<Trainer> trainer_with_weights(TrainerOptions options, const std::string& path) {
  options.progress_bar(false).console_log_interval("0ep").eval_interval("0ep");
  check_weights_file(path);
  if (is_checkpoint(path)) {
    // The trainer's own load: the model surgery the checkpoint was saved with, then the weights.
    return std::make_unique<Trainer>(std::move(options.load_path(path).load_weights_only(true)));
  }
  auto trainer = std::make_unique<Trainer>(std::move(options));  // the recipe's surgery at init
  load_weights(*trainer->state().model, path);
  return trainer;
}

void check_weights_file(const std::string& path) {
  std::string magic;
  try {
    magic = magic_of(path, 4);
  } catch (const FileError& e) {
    throw RecipeError(e.what());
  }
  // A checkpoint starts "BATO"; torch::save (model.pt) writes a zip.
  if (magic != "BATO" && magic != std::string("PK\x03\x04", 4) && !is_safetensors(path)) {
    throw RecipeError(path +
                      ": neither a baton checkpoint, a model.pt written by baton train, nor safetensors; give "
                      "RUN_DIR/model.pt, a checkpoint (RUN_DIR/checkpoints/latest) or FILE.safetensors");
  }
}

void load_weights(torch::nn::Module& target, const std::string& path) {
  if (is_safetensors(path)) {
    load_safetensors(target, path);  // its errors name the file and the tensors
    return;
  }
  std::shared_ptr<torch::nn::Module> module(&target, [](torch::nn::Module*) {});  // torch::load takes a pointer
  const auto params = target.parameters();
  const c10::Device device = params.empty() ? c10::Device(c10::kCPU) : params.front().device();
  try {
    torch::load(module, path, device);  // the weights where the model is
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw std::runtime_error(path + ": cannot load the model's weights: " + what.substr(0, what.find('\n')));
  }
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
