// baton predict RECIPE.yaml --load MODEL.pt [--inputs FILE] [--out predictions.npy] [--device DEVICE] [--set
// key=value]...
#include <cstdio>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "baton/data/readers.h"
#include "baton/train/recipe.h"
#include "commands.h"

namespace baton::cli {
namespace {

struct PredictArgs {
  std::string recipe;
  std::vector<std::string> sets;
  std::string load;
  std::string inputs;
  std::string out = "predictions.npy";
  std::string device;
};

void run_predict(const PredictArgs& args) {
  const std::vector<std::string> sets = with_device(args.sets, args.device);
  check_weights_file(args.load);  // before the data is read
  TrainingRun run = build_run(Recipe::load(args.recipe, sets));
  const auto trainer = trainer_with_weights(run.options, args.load);
  std::shared_ptr<Dataset> data = run.eval_data;
  if (!args.inputs.empty()) {
    at::Tensor x = as_float_inputs(read_array(args.inputs));
    // As the training inputs were prepared: the training set's statistics of the values read.
    if (auto* train = dynamic_cast<TensorDataset*>(run.train_data.get())) x = train->standardize(x);
    data = std::make_shared<TensorDataset>(x, torch::zeros({x.size(0)}, torch::kLong));
  }
  if (!data) throw RecipeError(args.recipe + ": no evaluation data to predict on; give --inputs FILE");
  if (data->size() == 0)
    throw RecipeError((args.inputs.empty() ? args.recipe : args.inputs) + ": no examples to predict on");
  DataLoader loader(data, DataLoaderOptions().batch_size(1000).shuffle(false));
  const at::Tensor logits = torch::cat(trainer->predict(loader)).to(torch::kCPU);
  write_npy(args.out, logits);
  std::printf("predicted %lld examples: logits %s written to %s\n", static_cast<long long>(logits.size(0)),
              c10::str(logits.sizes()).c_str(), args.out.c_str());
}

}  // namespace

void add_predict(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* cmd = app.add_subcommand("predict", "write a trained model's outputs for some inputs");
  cmd->add_option("recipe", args->recipe, "recipe YAML file")->required();
  cmd->add_option("--load", args->load, "weights written by baton train (RUN_DIR/model.pt)")->required();
  cmd->add_option("--inputs", args->inputs, "IDX or .npy inputs (default: the recipe's evaluation data)");
  cmd->add_option("--out", args->out, "where to write the outputs as .npy (default: predictions.npy)");
  cmd->add_option("--set", args->sets, "override a recipe key: key.path=value (repeatable)");
  add_device_option(cmd, args->device);
  cmd->callback([args] { run_predict(*args); });
}

}  // namespace baton::cli
