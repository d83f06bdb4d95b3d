// `baton train` from a C++ program: a recipe trained into its run folder with train_recipe, then
// continued with a longer max_duration (--autoresume), its weights evaluated and exported
// (evaluate_recipe, export_model), then a third call refused because the folder holds a run it
// was not told to continue. The run folder is what the command writes:
// recipe.yaml, metrics.jsonl, checkpoints/, model.pt, summary.json.
//
//   build/bin/train_recipe [FOLDER]   (default: a new folder under /tmp)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include <baton/io/file.h>
#include <baton/runs/model_commands.h>
#include <baton/runs/train_recipe.h>
#include <baton/train/recipe_file.h>

namespace fs = std::filesystem;

namespace {

// A small character-level language model on a text the example writes: no data set to install.
void write_inputs(const fs::path& folder) {
  std::ofstream text(folder / "text.txt");
  for (int i = 0; i < 200; ++i) text << "the quick brown fox jumps over the lazy dog " << i << "\n";
  std::ofstream recipe(folder / "recipe.yaml");
  recipe << "run_name: tiny_gpt\n"
            "seed: 0\n"
            "max_duration: 20ba\n"
            "eval_interval: 10ba\n"
            "eval_subset_num_batches: 2\n"
            "progress_bar: false\n"
            "console_log_interval: 0ep\n"
            "data: {dataset: text, path: \""
         << (folder / "text.txt").string()
         << "\", tokens: chars, context: 32, batch_size: 16,"
            " validation_fraction: 0.1}\n"
            "model: {name: gpt, layers: 1, width: 32, heads: 2}\n"
            "optimizer: {name: adamw, lr: 3.0e-3}\n"
            "loggers: {jsonl: }\n"
            "callbacks: {checkpoint_saver: }\n";
}

nlohmann::json summary(const fs::path& run_dir) {
  std::ifstream in(run_dir / "summary.json");
  return nlohmann::json::parse(in);
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path folder = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "baton_train_recipe_example";
  baton::remove_tree(folder);
  fs::create_directories(folder);
  write_inputs(folder);

  // Relative paths in the recipe are from the current folder.
  baton::TrainRequest request{.recipe = (folder / "recipe.yaml").string(), .run_dir = (folder / "run").string()};
  if (const int code = baton::train_recipe(request); code != 0) return code;
  const auto first = summary(request.run_dir);
  std::printf("first run: %lld steps, train/loss %.3f\n", first["steps"].get<long long>(),
              first["metrics"]["train/loss"].get<double>());

  // Longer, from the last checkpoint: the steps go on from 20, not from 0.
  request.sets = {"max_duration=40ba"};
  request.autoresume = true;
  if (const int code = baton::train_recipe(request); code != 0) return code;
  std::printf("resumed run: %lld steps in all\n", summary(request.run_dir)["steps"].get<long long>());

  // The trained weights evaluated and exported, as `baton eval` and `baton export` do.
  const std::string weights = (fs::path(request.run_dir) / "model.pt").string();
  const auto metrics = baton::evaluate_recipe({.recipe = request.recipe, .weights = weights});
  std::printf("evaluated: eval/loss %.3f\n", metrics.at("eval").at("loss"));
  const baton::Exported exported = baton::export_model({.checkpoint = weights,
                                                        .format = "safetensors",
                                                        .out = (folder / "model.safetensors").string(),
                                                        .recipe = request.recipe});
  std::printf("exported: %zu tensors to model.safetensors\n", exported.tensors);

  // A folder that holds a run is never written over silently.
  request.autoresume = false;
  try {
    baton::train_recipe(request);
    std::printf("FAIL: a third run replaced the first\n");
    return 1;
  } catch (const baton::RecipeError& e) {
    std::printf("refused: %s\n", e.what());
  }
  return 0;
}
