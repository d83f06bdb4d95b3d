// baton predict RECIPE.yaml --load MODEL.pt [--inputs FILE] [--out predictions.npy] [--device DEVICE] [--set
// key=value]...
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "baton/core/options.h"
#include "baton/core/precision.h"
#include "baton/data/image_folder.h"
#include "baton/data/readers.h"
#include "baton/data/webdataset.h"
#include "baton/io/file.h"
#include "baton/io/run_dir.h"
#include "baton/io/text.h"
#include "baton/io/write.h"
#include "baton/train/recipe.h"
#include "baton/train/weights_file.h"
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
  double max_output_mib = 1024;
};

// An image file or a folder: what `--inputs` names when the model trained on image folders.
bool names_images(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return true;
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// The class names the weights were trained with: classes.txt beside them (the run directory's), else
// the recipe's training set's.
std::vector<std::string> class_names(const std::string& weights, const Dataset& train) {
  const auto listed = std::filesystem::path(weights).parent_path() / RunDir::kClasses;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(listed, ec)) return train.class_names();
  std::vector<std::string> names;
  std::istringstream lines(read_file(listed.string(), {.what = "the class list", .max_bytes = 64 << 20}));
  for (std::string line; std::getline(lines, line);) names.push_back(line);
  if (static_cast<int64_t>(names.size()) != train.num_classes()) {
    throw RecipeError(listed.string() + ": " + std::to_string(names.size()) +
                      " classes, but the recipe's training set has " + std::to_string(train.num_classes()));
  }
  return names;
}

void run_predict(const PredictArgs& args) {
  const std::vector<std::string> sets = with_device(args.sets, args.device);
  const Recipe recipe = Recipe::load(args.recipe, sets);
  std::vector<std::string> inputs = recipe.input_files();  // its data too
  inputs.insert(inputs.end(), {args.load, args.inputs, args.recipe});
  check_output(args.out, "--out", inputs);  // before anything is read
  std::error_code ec;
  const bool replacing = std::filesystem::exists(args.out, ec);
  check_weights_file(args.load);  // before the data is read
  TrainingRun run = build_run(recipe);
  if (!run.precision_chosen) run.options.precision(Precision::kFp32);  // outputs not rounded by `auto`
  const auto trainer = trainer_with_weights(run.options, args.load);
  std::shared_ptr<Dataset> data = run.eval_data;
  std::shared_ptr<ImageFolder> images;  // --inputs of image files
  std::vector<std::string> classes;
  if (!args.inputs.empty() && names_images(args.inputs)) {
    const ImageFolderOptions* options = nullptr;  // the training images' pipeline
    if (const auto* folder = dynamic_cast<const ImageFolder*>(run.train_data.get())) options = &folder->options();
    if (const auto* shards = dynamic_cast<const WebDataset*>(run.train_data.get()))
      options = &shards->options().images();
    if (!options) {
      throw RecipeError(args.inputs + ": images, but the recipe trains on another kind of data; give the inputs as " +
                        "IDX or .npy, or a recipe with data.dataset: images or webdataset");
    }
    classes = class_names(args.load, *run.train_data);
    try {
      images = ImageFolder::from_files(args.inputs, *options, classes);
    } catch (const std::exception& e) {
      throw RecipeError(e.what());
    }
    data = images;
  } else if (!args.inputs.empty()) {
    at::Tensor x = as_float_inputs(read_array(args.inputs));
    // As the training inputs were prepared: the training set's statistics of the values read.
    if (auto* train = dynamic_cast<TensorDataset*>(run.train_data.get())) x = train->standardize(x);
    data = std::make_shared<TensorDataset>(x, torch::zeros({x.size(0)}, torch::kLong));
  }
  if (!data) throw RecipeError(args.recipe + ": no evaluation data to predict on; give --inputs FILE");
  if (data->size() == 0)
    throw RecipeError((args.inputs.empty() ? args.recipe : args.inputs) + ": no examples to predict on");
  // The evaluation's batches: eval_subset_num_batches counts the same batches as in eval.
  const auto& evaluators = run.options.eval_dataloaders();
  const int64_t batch = evaluators.empty() ? 1000 : evaluators.front().loader->batch_size();
  DataLoader loader(data, DataLoaderOptions().batch_size(batch).shuffle(false));
  const at::Tensor logits =
      torch::cat(trainer->predict(loader, static_cast<std::uint64_t>(args.max_output_mib * (1 << 20)))).to(torch::kCPU);
  write_npy(args.out, logits);
  if (images) {  // FILE: CLASS (probability)
    const at::Tensor p = torch::softmax(logits.to(torch::kFloat), 1);
    const auto [best, label] = p.max(1);
    for (int64_t i = 0; i < logits.size(0); ++i) {
      const int64_t c = label[i].item<int64_t>();
      std::printf("%s: %s (%.3f)\n", one_line(images->files()[i], 4096).c_str(),  // a newline in a name: \n
                  c < static_cast<int64_t>(classes.size()) ? classes[c].c_str() : std::to_string(c).c_str(),
                  best[i].item<double>());
    }
  }
  std::printf("predicted %lld examples: outputs %s written to %s%s\n", static_cast<long long>(logits.size(0)),
              c10::str(logits.sizes()).c_str(), args.out.c_str(), replacing ? " (replacing the file there)" : "");
  if (logits.size(0) < data->size()) {
    std::printf("(the first %lld of %lld examples: eval_subset_num_batches is %lld)\n",
                static_cast<long long>(logits.size(0)), static_cast<long long>(data->size()),
                static_cast<long long>(run.options.eval_subset_num_batches()));
  }
}

}  // namespace

void add_predict(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* cmd = app.add_subcommand("predict", "write a trained model's outputs for some inputs");
  cmd->add_option("recipe", args->recipe, "recipe YAML file")->required();
  cmd->add_option("--load", args->load, "weights written by baton train (RUN_DIR/model.pt)")->required();
  cmd->add_option("--inputs", args->inputs,
                  "IDX or .npy inputs, or an image file or folder when the recipe trains on images (default: the "
                  "recipe's evaluation data)");
  cmd->add_option("--out", args->out, "where to write the outputs as .npy (default: predictions.npy)");
  cmd->add_option("--set", args->sets, "override a recipe key: key.path=value (repeatable)");
  cmd->add_option("--max-output-mib", args->max_output_mib,
                  "refuse outputs larger than this many MiB in all (default 1024: a language model's logits add up)")
      ->check(finite_between(1, 1 << 30));
  add_device_option(cmd, args->device);
  cmd->callback([args] { run_predict(*args); });
}

}  // namespace baton::cli
