// What `baton eval`, `baton predict`, `baton export` and `baton tokenize` do, as library calls: a
// recipe's model with trained weights evaluated, its outputs for some inputs, the model written as
// TorchScript or safetensors, a corpus tokenized into token shards. Each checks its inputs and its
// output path before it reads data or writes (RecipeError, FileError: the user's input), and
// returns what the command prints.
//
//   baton::EvalRequest request;
//   request.recipe = "recipes/fashion_mnist.yaml";
//   request.weights = "runs/exp1/model.pt";
//   for (const auto& [set, metrics] : baton::evaluate_recipe(request))
//     for (const auto& [name, value] : metrics) std::printf("%s/%s %.4f\n", set.c_str(), name.c_str(), value);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "baton/data/tokenizer.h"

namespace baton {

// `sets` with device=DEVICE added when `device` is given. Throws RecipeError naming --device when
// this machine cannot run there.
std::vector<std::string> sets_with_device(std::vector<std::string> sets, const std::string& device);

struct EvalRequest {
  std::string recipe{};             // the recipe file: the model and its evaluation data
  std::vector<std::string> sets{};  // overrides, "key.path=value"
  std::string weights{};            // RUN_DIR/model.pt, a checkpoint, or FILE.safetensors
  std::string device{};             // "": the recipe's
};
// Each evaluation set's metrics ("eval" for the data set's own, then the recipe's eval: sets), in
// fp32 unless the recipe names a precision.
std::map<std::string, std::map<std::string, double>> evaluate_recipe(const EvalRequest& request);

struct PredictRequest {
  std::string recipe{};
  std::vector<std::string> sets{};
  std::string weights{};
  // IDX or .npy inputs, or an image file or folder when the model trained on images; "": the
  // recipe's evaluation data.
  std::string inputs{};
  std::string out = "predictions.npy";  // the outputs as .npy ("": not written)
  std::string device{};
  uint64_t max_output_bytes = uint64_t{1} << 30;  // more outputs than this: refused before they are made
  // A language model (token windows in, logits over the vocabulary out): instead of the logits, at
  // each position the top_k next tokens' ids (`out`) and log-probabilities (`out` with
  // .logprobs.npy), and the actual next token's log-probability (.target_logprobs.npy).
  int64_t top_k = 1;
};
struct Predictions {
  at::Tensor outputs;    // [N, ...] on the CPU (a language model's: the top-k ids, int64 [N, T, k])
  int64_t examples = 0;  // of the data: outputs.size(0) unless eval_subset_num_batches cut it
  int64_t eval_subset_num_batches = -1;
  bool replaced = false;  // `out` was there before
  // Images: each file, and the class names the weights were trained with (classes.txt beside them,
  // else the recipe's training set's).
  std::vector<std::string> files, classes;
  // A language model's: the top-k log-probabilities [N, T, k], the actual next tokens' [N, T], and
  // the files they went to.
  at::Tensor logprobs, target_logprobs;
  std::string logprobs_file, target_logprobs_file;
};
Predictions predict_recipe(const PredictRequest& request);

struct ExportRequest {
  std::string checkpoint{};            // a checkpoint (the model it holds), or weights with `recipe`
  std::string format = "torchscript";  // or "safetensors", "hf" or "peft" (`out` a folder)
  std::string out{};
  std::string out_flag = "--out";  // the flag that named `out`, in messages
  std::string recipe{};            // builds the model from this recipe instead of the checkpoint's
  std::vector<std::string> sets{};
  std::string device = "cpu";  // where the exported module's tensors live
  bool merge_lora = false;     // LoRA adapters folded into the weights first (--merge-lora)
};
struct Exported {
  std::size_t tensors = 0;           // safetensors: how many
  std::size_t bytes = 0;             // TorchScript: the file's size
  std::vector<int64_t> input_shape;  // one example's
};
Exported export_model(const ExportRequest& request);

struct TokenizeRequest {
  std::vector<std::string> texts{};  // text files or folders of them
  std::string out{};                 // the folder: train_NNNNNN.bin, val_NNNNNN.bin and the tokenizer's files
  int64_t vocab_size = 0;            // > 0: train a SentencePiece tokenizer of this many tokens
  std::string tokenizer{};           // or use this one: a model's folder, its tokenizer.json, a .model
  TokenizerTraining training{};
  TokenizeOptions options{};
  std::function<void(const std::string&)> progress{};  // "training a bpe tokenizer of ..." (may be empty)
};
struct TokenizedCorpus {
  TokenizeSummary summary;     // summary.token_bytes: the shards' uint16 (2) or uint32 (4)
  std::string tokenizer_path;  // OUT/tokenizer.model or OUT/tokenizer.json
  int64_t vocab_size = 0;
};
// Writes into a folder beside `out` and moves the files in once all are written: a failed or killed
// run leaves nothing in `out`. Refuses an `out` that holds a tokenized corpus already.
TokenizedCorpus tokenize_corpus(TokenizeRequest request);

// `baton tokenize --tokenizer PATH --ids FILE`: the ids of a text file's text (UTF-8), nothing added.
std::vector<int64_t> text_ids(const std::string& tokenizer, const std::string& file);
// `baton tokenize --tokenizer PATH --decode FILE`: the text of the ids FILE holds, a JSON list (what
// --ids prints) or a token shard (.bin). Throws RecipeError naming the file: neither, or an id
// outside the tokenizer's vocabulary.
std::string ids_text(const std::string& tokenizer, const std::string& file);

}  // namespace baton
