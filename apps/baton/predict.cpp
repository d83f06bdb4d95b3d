// baton predict RECIPE.yaml --load MODEL.pt [--inputs FILE] [--out predictions.npy] [--device DEVICE] [--set
// key=value]... [--top-k K] [--max-output-mib N] (the library call: predict_recipe,
// include/baton/runs/model_commands.h)
#include <cmath>
#include <cstdio>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "baton/io/text.h"
#include "baton/runs/model_commands.h"
#include "commands.h"

namespace baton::cli {
namespace {

// A language model's: where its next tokens went, and how likely it found the actual ones.
void print_next_tokens(const PredictRequest& request, const Predictions& p) {
  const double mean = p.target_logprobs.to(torch::kDouble).mean().item<double>();
  std::printf(
      "predicted %lld windows of %lld tokens: the top %lld next tokens' ids %s written to %s, their "
      "log-probabilities to %s, the actual next tokens' to %s\n",
      static_cast<long long>(p.outputs.size(0)), static_cast<long long>(p.outputs.size(1)),
      static_cast<long long>(p.outputs.size(2)), c10::str(p.outputs.sizes()).c_str(), request.out.c_str(),
      p.logprobs_file.c_str(), p.target_logprobs_file.c_str());
  std::printf(
      "the actual next tokens: mean log-probability %.4f (perplexity %.3f); text from a prompt: baton generate\n", mean,
      std::exp(-mean));
}

// A classifier's: its outputs, and each image file's class.
void print_classes(const PredictRequest& request, const Predictions& p) {
  const at::Tensor& logits = p.outputs;
  if (!p.files.empty()) {  // FILE: CLASS (probability)
    const at::Tensor probabilities = torch::softmax(logits.to(torch::kFloat), 1);
    const auto [best, label] = probabilities.max(1);
    for (int64_t i = 0; i < logits.size(0); ++i) {
      const int64_t c = label[i].item<int64_t>();
      std::printf("%s: %s (%.3f)\n", one_line(p.files[i], 4096).c_str(),  // a newline in a name: \n
                  c < static_cast<int64_t>(p.classes.size()) ? p.classes[c].c_str() : std::to_string(c).c_str(),
                  best[i].item<double>());
    }
  }
  std::printf("predicted %lld examples: outputs %s written to %s%s\n", static_cast<long long>(logits.size(0)),
              c10::str(logits.sizes()).c_str(), request.out.c_str(), p.replaced ? " (replacing the file there)" : "");
}

void print_predictions(const PredictRequest& request, const Predictions& p) {
  if (p.target_logprobs.defined()) {
    print_next_tokens(request, p);
  } else {
    print_classes(request, p);
  }
  if (p.outputs.size(0) < p.examples) {
    std::printf("(the first %lld of %lld examples: eval_subset_num_batches is %lld)\n",
                static_cast<long long>(p.outputs.size(0)), static_cast<long long>(p.examples),
                static_cast<long long>(p.eval_subset_num_batches));
  }
}

}  // namespace

void add_predict(CLI::App& app) {
  auto request = std::make_shared<PredictRequest>();
  auto max_output_mib = std::make_shared<double>(1024);
  CLI::App* cmd = app.add_subcommand("predict", "write a trained model's outputs for some inputs");
  cmd->add_option("recipe", request->recipe, "recipe YAML file")->required();
  cmd->add_option("--load", request->weights, "weights written by baton train (RUN_DIR/model.pt)")->required();
  cmd->add_option("--inputs", request->inputs,
                  "IDX or .npy inputs, or an image file or folder when the recipe trains on images (default: the "
                  "recipe's evaluation data)");
  cmd->add_option("--out", request->out, "where to write the outputs as .npy (default: predictions.npy)");
  cmd->add_option("--set", request->sets, "override a recipe key: key.path=value (repeatable)");
  cmd->add_option("--max-output-mib", *max_output_mib,
                  "refuse outputs larger than this many MiB in all (default 1024: a language model's logits add up)")
      ->check(finite_between(1, 1 << 30));
  cmd->add_option("--top-k", request->top_k,
                  "A language model: the top K next tokens at each position (their ids and log-probabilities)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}))
      ->capture_default_str();
  add_device_option(cmd, request->device);
  cmd->callback([request, max_output_mib] {
    request->max_output_bytes = static_cast<std::uint64_t>(*max_output_mib * (1 << 20));
    print_predictions(*request, predict_recipe(*request));
  });
}

}  // namespace baton::cli
