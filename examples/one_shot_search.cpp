// `baton search --model-space cnn_space --strategy spos` from a C++ program: the zoo's CNN space
// searched by single-path one-shot search (one supernet trained once, architectures evaluated with
// the weights they inherit, the best retrained), on small images the example writes. The search
// folder is what the command writes: search.db, supernet.ckpt, model_space.json, spos.json.
//
//   build/bin/one_shot_search [FOLDER]   (default: a new folder under /tmp)
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <baton/data/readers.h>
#include <baton/io/file.h>
#include <baton/runs/search_run.h>

namespace fs = std::filesystem;

namespace {

// 1x16x16 images of 4 classes (a bright quadrant each) as .npy files, and a recipe for them.
void write_inputs(const fs::path& folder) {
  torch::manual_seed(0);
  for (const auto& [name, n] : {std::tuple{"train", 256}, std::tuple{"eval", 64}}) {
    const at::Tensor labels = torch::randint(0, 4, {n}, torch::kLong);
    at::Tensor x = torch::randn({n, 1, 16, 16}) * 0.5;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = labels[i].item<int64_t>();
      x[i].slice(1, (c / 2) * 8, (c / 2) * 8 + 8).slice(2, (c % 2) * 8, (c % 2) * 8 + 8) += 2.0;
    }
    baton::write_npy((folder / (std::string(name) + "_x.npy")).string(), x);
    baton::write_npy((folder / (std::string(name) + "_y.npy")).string(), labels);
  }
  std::ofstream recipe(folder / "recipe.yaml");
  recipe << "seed: 0\nmax_duration: 64ba\nprogress_bar: false\nconsole_log_interval: 0ep\n"
            "data: {dataset: files, batch_size: 32, train_inputs: \""
         << (folder / "train_x.npy").string() << "\", train_labels: \"" << (folder / "train_y.npy").string()
         << "\", eval_inputs: \"" << (folder / "eval_x.npy").string() << "\", eval_labels: \""
         << (folder / "eval_y.npy").string() << "\"}\n"
         << "optimizer: {name: sgd, lr: 0.05, momentum: 0.9}\n";
  // A supernet shares the weights of its layer choices, not of widths: one width a stage.
  std::ofstream space(folder / "widths.json");
  space << R"({"model.arch.stage1_width": {"_type": "choice", "_value": [16]},
               "model.arch.stage2_width": {"_type": "choice", "_value": [16]},
               "model.arch.stage3_width": {"_type": "choice", "_value": [16]}})";
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path folder = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "baton_one_shot_search_example";
  baton::remove_tree(folder);
  fs::create_directories(folder);
  write_inputs(folder);

  baton::SearchRequest request;
  request.model_space = "cnn_space";  // the trials' space: its choices under model.arch
  request.options.recipe((folder / "recipe.yaml").string())
      .space((folder / "widths.json").string())
      .metric("eval/accuracy")
      .trials(6)
      .strategy("spos")
      .strategy_options({"supernet_duration=128ba", "recalibrate_batches=2", "population=4", "sample_size=2"})
      .seed(1)
      .run_dir(folder / "search")
      .out(nullptr);
  try {
    if (const int code = baton::run_search(request); code != 0) return code;
  } catch (const std::exception& e) {  // bad input, said before the supernet trains
    std::fprintf(stderr, "one_shot_search: %s\n", e.what());
    return 2;
  }

  std::ifstream in(folder / "search" / "spos.json");
  const auto report = nlohmann::json::parse(in);
  const auto& best = report.at("search").at("best");
  std::printf(
      "one-shot: %lld architectures evaluated on the supernet; best inherited eval/accuracy %.4f, "
      "retrained %.4f: stage2_op %s\n",
      static_cast<long long>(report.at("search").at("trials").get<int64_t>()), best.at("inherited").get<double>(),
      report.at("retrain").at("eval/accuracy").get<double>(),
      best.at("parameters").at("model.arch.stage2_op").get<std::string>().c_str());
  return 0;
}
