// Small recipes the runs tests train in a second or two, their data written by the test: no data
// set to install.
#pragma once

#include <fstream>
#include <string>

#include <torch/torch.h>

#include "baton/data/readers.h"
#include "common/test_util.h"

namespace baton::testing {

// A 1-layer gpt over a text of `lines` lines written beside it; `extra`: more recipe lines (when
// it evaluates, at the end by default).
inline std::string text_gpt_recipe(const TempDir& dir, int lines = 60,
                                   const std::string& extra = "eval_interval: 0\n") {
  std::ofstream text(dir.file("text.txt"));
  for (int i = 0; i < lines; ++i) text << "the quick brown fox jumps over the lazy dog " << i << "\n";
  std::ofstream recipe(dir.file("recipe.yaml"));
  recipe << "seed: 0\nmax_duration: 4ba\neval_subset_num_batches: 2\nprogress_bar: false\n"
            "console_log_interval: 0ep\n"
            "data: {dataset: text, path: \""
         << dir.file("text.txt")
         << "\", tokens: chars, context: 16, batch_size: 8, validation_fraction: 0.2}\n"
            "model: {name: gpt, layers: 1, width: 16, heads: 2}\noptimizer: {name: adamw, lr: 0.01}\n"
         << extra;
  return dir.file("recipe.yaml");
}

// 1x16x16 images of 4 classes as .npy files (a bright quadrant a class), and an mlp recipe for them;
// `extra`: more recipe lines.
inline std::string image_recipe(const TempDir& dir, const std::string& extra = "eval_interval: 0\n") {
  for (const auto& [name, n, seed] : {std::tuple{"train", 128, 1}, std::tuple{"eval", 32, 2}}) {
    auto gen = at::detail::createCPUGenerator(seed);
    const at::Tensor labels = torch::randint(0, 4, {n}, gen, torch::kLong);
    at::Tensor x = torch::randn({n, 1, 16, 16}, gen) * 0.5;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = labels[i].item<int64_t>();
      x[i].slice(1, (c / 2) * 8, (c / 2) * 8 + 8).slice(2, (c % 2) * 8, (c % 2) * 8 + 8) += 2.0;
    }
    write_npy(dir.file(std::string(name) + "_x.npy"), x);
    write_npy(dir.file(std::string(name) + "_y.npy"), labels);
  }
  std::ofstream recipe(dir.file("images.yaml"));
  recipe << "seed: 0\nmax_duration: 4ba\nprogress_bar: false\nconsole_log_interval: 0ep\n"
            "data: {dataset: files, batch_size: 16, train_inputs: \""
         << dir.file("train_x.npy") << "\", train_labels: \"" << dir.file("train_y.npy") << "\", eval_inputs: \""
         << dir.file("eval_x.npy") << "\", eval_labels: \"" << dir.file("eval_y.npy")
         << "\"}\nmodel: {name: mlp}\noptimizer: {name: sgd, lr: 0.05, momentum: 0.9}\n"
         << extra;
  return dir.file("images.yaml");
}

}  // namespace baton::testing
