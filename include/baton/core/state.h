// State: everything a training run holds, shared by the trainer, algorithms and callbacks.
//
// Algorithms change it in place (state.batch, state.outputs, state.loss, the model's modules);
// callbacks read it. The trainer fills the fields; a default-constructed State is empty.
//
//   baton::State state;
//   state.max_duration = baton::Time::parse("3ep");
//   state.algorithms.push_back(std::make_shared<MyAlgorithm>());
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "baton/core/algorithm.h"
#include "baton/core/batch_source.h"
#include "baton/core/callback.h"
#include "baton/core/grad_scaler.h"
#include "baton/core/precision.h"
#include "baton/core/profiler.h"
#include "baton/core/schedule.h"
#include "baton/core/state_dict.h"
#include "baton/core/time.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn
namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace baton {

// Sequence outputs (logits [N, T, classes], a language model's) and their targets ([N, T] class
// indices or [N, T, classes] probabilities) as one row per position: [N*T, classes] and [N*T] or
// [N*T, classes]. Losses and metrics count each position as an example. Other shapes unchanged.
std::pair<at::Tensor, at::Tensor> positions_as_rows(const at::Tensor& outputs, const at::Tensor& targets);

class State {
 public:
  State();
  ~State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // What is trained.
  std::shared_ptr<torch::nn::Module> model;
  // Names of the model's tensors ("model.layers.0.mlp.up_proj.weight", as named_parameters gives
  // them) that checkpoints leave out and loading does not ask for: a LoRA run's frozen base, which
  // the model's own source (its Hugging Face folder) gives back. Empty: every tensor is saved.
  std::set<std::string> unsaved_model_tensors;
  std::vector<std::shared_ptr<torch::optim::Optimizer>> optimizers;
  std::vector<std::shared_ptr<Scheduler>> schedulers;

  // The loader in use now, its label ("train", or an evaluator's name) and its length in batches.
  std::shared_ptr<BatchSource> dataloader;
  std::string dataloader_label;
  std::optional<int64_t> dataloader_len;

  // The current batch, the model's outputs for it, and its loss.
  Batch batch;
  // Examples in the current training batch as the loader gave it, over every data-parallel rank
  // (batch.size() is this rank's share, after algorithms that select or resize). Set before
  // batch_start; what the timestamp's sample count grows by.
  int64_t batch_samples = 0;
  // Under data parallelism: averages the model's gradients over the ranks, as the trainer does
  // after its backward. An algorithm that runs a backward of its own (SAM) calls it after. Empty
  // (nothing to do) without data parallelism.
  std::function<void()> reduce_gradients;
  // How the ranks share the training state (TrainerOptions::sharding). Default: kNone.
  Sharding sharding = Sharding::kNone;
  // Under sharding: gradients | full, the gradients this rank holds after the trainer's backward:
  // its shards of the flattened gradients (the parameters' own .grad are empty); an algorithm that
  // reads or scales gradients (clipping) works on these, and sums what needs every rank's (a norm)
  // with sum_over_ranks. Both empty otherwise.
  std::function<std::vector<at::Tensor>()> gradient_shards;
  std::function<at::Tensor(const at::Tensor&)> sum_over_ranks;
  at::Tensor outputs;
  at::Tensor loss;
  // Examples per microbatch, and how many microbatches make this batch. Default: 1 (whole batch).
  int64_t microbatch_size = 0;
  int64_t num_microbatches = 1;

  // Where the run is, and when it ends. Default: no max_duration (the trainer requires one).
  Timestamp timestamp;
  std::optional<Time> max_duration;

  // Run order is list order, subject to the engine's passes.
  std::vector<std::shared_ptr<Algorithm>> algorithms;
  // Callbacks and LoggerDestinations (loggers are callbacks too).
  std::vector<std::shared_ptr<Callback>> callbacks;

  // Default: kFp32.
  Precision precision = Precision::kFp32;
  // Where the model, its optimizer state, the batches and the algorithms' tensors live. An
  // algorithm that makes a tensor makes it here (or on the device of the tensor it works on).
  // Default: the CPU.
  c10::Device device = c10::Device(c10::kCPU);
  // Under amp_fp16: the loss scaler. The trainer scales its loss before backward and unscales
  // the gradients before after_train_batch; an algorithm that runs a backward of its own (SAM)
  // scales its loss with it and unscales after. Default: nullptr (no scaling).
  std::shared_ptr<GradScaler> grad_scaler;
  // Default: "" (the trainer names the run).
  std::string run_name;
  // This process's rank and the number of ranks. Default: 0 of 1.
  int rank = 0;
  int world_size = 1;
  // Latest evaluation metrics by evaluator label, then metric name.
  std::map<std::string, std::map<std::string, double>> eval_metrics;
  // The latest value of a logged evaluation metric, "<label>/<metric>" ("eval/accuracy",
  // "eval/val/f1": the label is all before the last '/'); none before it is first evaluated.
  std::optional<double> eval_metric(const std::string& key) const;
  // Default: nullptr (no profiling, no cost).
  std::shared_ptr<Profiler> profiler;

  // Ends fit() after the current batch.
  void stop_training() { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }
  // Clears a stop request: the trainer calls this when fit() starts again.
  void clear_stop_request() { stop_requested_ = false; }

  // The fraction of max_duration done, in max_duration's unit; nullopt without a max_duration.
  std::optional<double> elapsed_duration() const;

  // The model's parameters and buffers ("model/<name>"), the timestamp, run name, max_duration,
  // precision, and every algorithm's and callback's state ("algorithms/<name>", "callbacks/<name>").
  // Optimizer and scheduler state come with checkpoints (baton/train).
  StateDict state_dict() const;
  // Restores what state_dict() saved. Throws std::invalid_argument naming a missing or
  // mis-shaped model tensor.
  void load_state_dict(const StateDict& state);

 private:
  bool stop_requested_ = false;
};

}  // namespace baton
