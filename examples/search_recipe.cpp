// `baton search` from a C++ program: a recipe's learning rate searched with run_search, its trials
// trained as fused trials in this process (two at once over one data stream: no `baton` program
// needed), then the best trial read from the search's summary.json. The search folder is what the
// command writes: search.db (its storage), summary.json, trials/<id>/ (each trial's run folder).
//
//   build/bin/search_recipe [FOLDER]   (default: a new folder under /tmp)
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include <baton/io/file.h>
#include <baton/runs/search_run.h>

namespace fs = std::filesystem;

namespace {

// A small character-level language model on a text the example writes: no data set to install.
void write_inputs(const fs::path& folder) {
  std::ofstream text(folder / "text.txt");
  for (int i = 0; i < 200; ++i) text << "the quick brown fox jumps over the lazy dog " << i << "\n";
  std::ofstream recipe(folder / "recipe.yaml");
  recipe << "run_name: tiny_gpt\n"
            "seed: 0\n"
            "max_duration: 10ba\n"
            "eval_subset_num_batches: 2\n"
            "progress_bar: false\n"
            "console_log_interval: 0ep\n"
            "data: {dataset: text, path: \""
         << (folder / "text.txt").string()
         << "\", tokens: chars, context: 32, batch_size: 16,"
            " validation_fraction: 0.1}\n"
            "model: {name: gpt, layers: 1, width: 32, heads: 2}\n"
            "optimizer: {name: adamw, lr: 3.0e-3}\n";
  // The search space, NNI's format: a recipe key and its distribution.
  std::ofstream space(folder / "space.json");
  space << R"({"optimizer.lr": {"_type": "loguniform", "_value": [1.0e-4, 1.0e-2]}})";
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path folder = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "baton_search_recipe_example";
  baton::remove_tree(folder);
  fs::create_directories(folder);
  write_inputs(folder);

  baton::SearchRequest request;
  request.options.recipe((folder / "recipe.yaml").string())
      .space((folder / "space.json").string())
      .metric("eval/loss")
      .maximize(false)
      .trials(4)
      .strategy("random")
      .seed(1)
      .run_dir(folder / "search")
      .out(nullptr);
  request.fuse = 2;
  try {
    if (const int code = baton::run_search(request); code != 0) return code;
  } catch (const std::exception& e) {  // bad input, said before any trial runs
    std::fprintf(stderr, "search_recipe: %s\n", e.what());
    return 2;
  }

  std::ifstream in(folder / "search" / "summary.json");
  const auto summary = nlohmann::json::parse(in);
  const auto& best = summary.at("best");
  std::printf("searched: %lld trials, best %s = %.4f at lr %.6f\n",
              static_cast<long long>(summary.at("trials").at("total").get<int64_t>()), request.options.metric().c_str(),
              best.at("value").get<double>(), best.at("parameters").at("optimizer.lr").get<double>());
  return 0;
}
