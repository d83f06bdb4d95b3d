// Trainer: the training loop. It owns the State, the Engine and the Logger, fires every event in
// the order docs/events.md gives, and times training apart from evaluation.
//
//   auto [train, test] = baton::load_fashion_mnist();
//   auto model = baton::make_model("fashion_cnn", baton::ModelOptions().input_shape({1, 28, 28}));
//   auto sgd = baton::make_optimizer(baton::OptimizerOptions().name("sgd").lr(0.05), model->parameters());
//   auto train_loader = std::make_shared<baton::DataLoader>(train, baton::DataLoaderOptions().batch_size(128));
//   auto test_loader = std::make_shared<baton::DataLoader>(test, baton::DataLoaderOptions().shuffle(false));
//   baton::Trainer trainer(baton::TrainerOptions()
//                              .model(model)
//                              .train_dataloader(train_loader)
//                              .eval_dataloader("eval", test_loader)
//                              .max_duration("3ep")
//                              .optimizers({sgd}));
//   trainer.fit();
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "baton/core/engine.h"
#include "baton/core/logger.h"
#include "baton/core/options.h"
#include "baton/core/state.h"
#include "baton/data/dataloader.h"
#include "baton/models/model.h"
#include "baton/optim/scheduler.h"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace baton {

// An evaluation set (Composer's Evaluator): its metrics are logged as "<label>/<metric>"; `metrics`
// and `interval` default to TrainerOptions' eval_metrics and eval_interval.
struct Evaluator {
  std::string label;
  std::shared_ptr<DataLoader> loader;
  std::vector<std::string> metrics;  // make_metric names; empty: TrainerOptions::eval_metrics
  std::optional<Time> interval;      // unset: TrainerOptions::eval_interval (0: only standalone eval())
};
using Evaluators = std::vector<Evaluator>;

// Data parallelism over MPI ranks. kAuto: on when the process is one of several ranks started by
// mpirun/mpiexec or srun; kOn: always (a job of one rank without a launcher); kOff: never.
enum class Distributed { kAuto, kOn, kOff };
BATON_ENUM_NAMES(Distributed, {Distributed::kAuto, "auto"}, {Distributed::kOn, "on"}, {Distributed::kOff, "off"})
Distributed parse_distributed(std::string_view text);  // auto, on, off; std::invalid_argument otherwise

// How data-parallel gradients are averaged: nccl (on the GPUs, no host wait), mpi (on the host;
// GPU gradients go through host memory) or auto: nccl when the ranks train on GPUs, one each, and
// baton was built with NCCL, else mpi.
enum class DdpBackend { kAuto, kNccl, kMpi };
BATON_ENUM_NAMES(DdpBackend, {DdpBackend::kAuto, "auto"}, {DdpBackend::kNccl, "nccl"}, {DdpBackend::kMpi, "mpi"})

// The train step in CUDA graphs (docs/devices.md, "CUDA graphs"). kAuto: on a GPU, when every
// algorithm, callback and option allows it, else eager with one line saying which and why (and on
// the CPU, eager); kOn: the same, but what stops graphs is an error; kOff: always eager.
enum class CudaGraphs { kAuto, kOn, kOff };
BATON_ENUM_NAMES(CudaGraphs, {CudaGraphs::kAuto, "auto"}, {CudaGraphs::kOn, "on"}, {CudaGraphs::kOff, "off"})
CudaGraphs parse_cuda_graphs(std::string_view text);  // auto, on, off; std::invalid_argument otherwise

// How the checkpoint saver writes a sharded run's checkpoints (TrainerOptions::save_format).
enum class SaveFormat { kFull, kSharded };
BATON_ENUM_NAMES(SaveFormat, {SaveFormat::kFull, "full"}, {SaveFormat::kSharded, "sharded"})

// Whether a larger monitored value is better (save_top_k).
enum class SaveMode { kAuto, kMax, kMin };
BATON_ENUM_NAMES(SaveMode, {SaveMode::kAuto, "auto"}, {SaveMode::kMax, "max"}, {SaveMode::kMin, "min"})

class TrainerOptions {
  // What is trained. Required.
  BATON_ARG(std::shared_ptr<Model>, model);
  // Required for fit().
  BATON_ARG(std::shared_ptr<DataLoader>, train_dataloader);
  // Evaluation sets, in the order they run; metrics are logged as "<label>/<metric>". Default: none.
  BATON_ARG(Evaluators, eval_dataloaders);
  // Default: 1ep. Units: ep, ba, sp (no data set here counts tokens).
  // Or wall-clock seconds of training ("90s", "30m", "2h": Time's seconds; Lightning's max_time):
  // evaluation excluded, the run's earlier fits and resumes counted (the timestamp's total_wct); fit
  // stops after the batch that reaches it, evaluates and checkpoints.
  BATON_ARG(Time, max_duration) = Time::from_epoch(1);
  // Default: DecoupledSGDW with lr 0.1 (as Composer) when empty.
  BATON_ARG(std::vector<std::shared_ptr<torch::optim::Optimizer>>, optimizers);
  // Applied to every optimizer each batch, one after the other. Default: none.
  BATON_ARG(std::vector<std::shared_ptr<Scheduler>>, schedulers);
  BATON_ARG(std::vector<std::shared_ptr<Algorithm>>, algorithms);
  BATON_ARG(std::vector<std::shared_ptr<Callback>>, callbacks);
  BATON_ARG(std::vector<std::shared_ptr<LoggerDestination>>, loggers);
  // Evaluate every this often during fit (ep, ba, sp or dur), and once at the end. A zero value
  // means no evaluation during fit. Default: 1ep.
  BATON_ARG(Time, eval_interval) = Time::from_epoch(1);
  // Epochs per iteration (Composer's iteration_length): iteration_start fires before the first
  // epoch of each iteration, iteration_end and iteration_checkpoint after the last one's
  // epoch_checkpoint. Default: 0, the whole run is one iteration: iteration_start fires once, when
  // training starts from epoch 0, and iteration_end never (as in Composer).
  BATON_ARG(int64_t, iteration_length) = 0;
  // Evaluate on at most this many batches of each evaluator. Default: -1 (all).
  BATON_ARG(int64_t, eval_subset_num_batches) = -1;
  // Examples per microbatch; gradients of the microbatches add up to the batch's. Default: nullopt
  // ("auto"): on the CPU the whole batch is one microbatch, since splitting only adds overhead there
  // and memory is not what limits a batch.
  BATON_ARG(std::optional<int64_t>, device_train_microbatch_size);
  // Where to train: "auto", "cpu", "cuda" or "cuda:N" (baton/core/device.h). auto: the first GPU
  // when there is one (under data parallelism, the rank's GPU on its machine), else the CPU. The
  // model, its optimizer state, the batches, the algorithms' tensors and the evaluation metrics
  // live there. Default: "auto".
  BATON_ARG(std::string, device) = std::string("auto");
  // Default: fp32. amp_bf16 runs forward and loss under autocast to bfloat16 (CPU and CUDA);
  // amp_fp16 under autocast to float16 with dynamic loss scaling (GradScaler; CUDA only).
  BATON_ARG(Precision, precision) = Precision::kFp32;
  // TF32 (10 bits of mantissa; a several-fold speed-up on Ampere and later) for fp32 work on GPUs:
  // true for matrix products and convolutions, false for neither. Default: unset, PyTorch's
  // defaults: convolutions in TF32 (cuDNN's), matrix products in exact fp32.
  BATON_ARG(std::optional<bool>, tf32);
  // On a GPU, after a few eager steps per batch shape, forward, loss, backward and the optimizer
  // step are captured once in a CUDA graph and replayed: one launch per step instead of hundreds.
  // The events inside the step fire after it, every batch. Default: auto.
  BATON_ARG(CudaGraphs, cuda_graphs) = CudaGraphs::kAuto;
  // The model's blocks whose activations backward recomputes instead of keeping
  // (baton/models/checkpointing.h): empty, none; {"auto"}, the repeated blocks (gpt's, a ResNet's);
  // else module kinds ({"Block"}). Less memory a step for a second forward of each block (under the
  // forward's autocast).
  BATON_ARG(std::vector<std::string>, activation_checkpointing);
  // Batches between reads of train/loss from the device. Until read, each batch's loss stays on
  // the device, so the host queues work without waiting for it; every batch's loss is still
  // logged, with its own step. Evaluation, checkpoints and the end of fit read what is pending.
  // Default: nullopt ("auto"): every batch on the CPU (reading costs nothing there), 50 on a GPU.
  BATON_ARG(std::optional<int64_t>, log_interval);
  // Seeds LibTorch's generators (CPU and CUDA) before training. Default: 0.
  BATON_ARG(uint64_t, seed) = 0;
  // Deterministic algorithms only (LibTorch's setting), cuDNN's deterministic kernels without
  // benchmarking, and cuBLAS's deterministic workspace (CUBLAS_WORKSPACE_CONFIG). Default: false.
  BATON_ARG(bool, deterministic) = false;
  // LibTorch's intra-op threads. Default: 0 = every core. OpenBLAS is held to one thread so that
  // its threads do not fight LibTorch's.
  BATON_ARG(int, num_threads) = 0;
  // Default: "" (the trainer names it "run-<time>").
  BATON_ARG(std::string, run_name);
  // Default: true.
  BATON_ARG(bool, progress_bar) = true;
  // How often the console logger prints the latest metrics (0: no console logger). Default: 1ep.
  BATON_ARG(Time, console_log_interval) = Time::from_epoch(1);
  // Logged once to every logger when the trainer is built (baton train: the resolved recipe).
  // Default: none.
  BATON_ARG(nlohmann::json, hyperparameters) = nlohmann::json::object();
  // Evaluation metrics (make_metric names). Default: empty, meaning the model's metrics().
  BATON_ARG(std::vector<std::string>, eval_metrics);

  // Checkpoints. Where to write them. Default: "" (no checkpoints).
  BATON_ARG(std::string, save_folder);
  // How often (ep, ba or sp), on the *_checkpoint events; one is always written at fit end. Default: 1ep.
  BATON_ARG(Time, save_interval) = Time::from_epoch(1);
  // {epoch}, {batch} and {run_name} are filled in. Default: "ep{epoch}-ba{batch}.ckpt".
  BATON_ARG(std::string, save_filename) = std::string("ep{epoch}-ba{batch}.ckpt");
  // Older checkpoints beyond this many are deleted. Default: -1 (keep all).
  BATON_ARG(int, save_num_checkpoints_to_keep) = -1;
  // Keep the best K checkpoints by `save_monitor` (an evaluation metric, "eval/val/accuracy") plus
  // the latest; best.ckpt points at the best. A checkpoint is also written after each evaluation
  // of the monitor's set. Default: 0 (off: save_num_checkpoints_to_keep applies).
  BATON_ARG(int, save_top_k) = 0;
  BATON_ARG(std::string, save_monitor);
  // Which way is better: max, min, or auto (min for names with loss, error, mse, mae or
  // perplexity, else max). Default: auto.
  BATON_ARG(SaveMode, save_mode) = SaveMode::kAuto;
  // Only the model's weights. Default: false.
  BATON_ARG(bool, save_weights_only) = false;
  // Under sharding, the saver's checkpoints: kFull, one file (the shards gathered); kSharded, each
  // rank writes its shards of the optimizer's state to a file of its own beside the checkpoint, which
  // rank 0 writes last with the rest (docs/checkpoints.md). Both resume on any number of ranks.
  // Default: kFull.
  BATON_ARG(SaveFormat, save_format) = SaveFormat::kFull;
  // Extra metadata stored in every checkpoint (the CLI puts the resolved recipe here).
  BATON_ARG(nlohmann::json, checkpoint_meta) = nlohmann::json::object();
  // A checkpoint to start from. Default: "" (none).
  BATON_ARG(std::string, load_path);
  // Take only the model's weights (fine-tuning). Default: false.
  BATON_ARG(bool, load_weights_only) = false;
  // Every model tensor must be in the checkpoint and every checkpoint model tensor in the model.
  // Default: true.
  BATON_ARG(bool, load_strict) = true;
  // Tensor names to leave as they are, with * as a wildcard ("model/module.f2.*"). Default: none.
  BATON_ARG(std::vector<std::string>, load_ignore_keys);
  // Resume from save_folder/latest when it is there and good (else the newest good checkpoint in
  // save_folder, else load_path). Default: false.
  BATON_ARG(bool, autoresume) = false;

  // Data parallelism (docs/distributed.md): every rank takes its share of each global batch
  // (train_dataloader's batch_size is the global batch), gradients are averaged over the ranks in
  // buckets of this many MiB, reduced during backward when `ddp_overlap`. Only rank 0 logs and
  // writes checkpoints. Defaults: auto, 1 MiB, true.
  BATON_ARG(Distributed, distributed) = Distributed::kAuto;
  BATON_ARG(double, ddp_bucket_mb) = 1.0;
  BATON_ARG(bool, ddp_overlap) = true;
  BATON_ARG(DdpBackend, ddp_backend) = DdpBackend::kAuto;
  // Sharded data parallelism (docs/distributed.md, "Sharding"): kOptimizer cuts each optimizer's
  // state over the ranks (1/N each), kGradients the averaged gradients too (reduce-scattered),
  // kFull the parameters too. Every rank of the job calls save_checkpoint together (it gathers
  // the shards). Refused: amp_fp16 (its loss scaler), algorithms that need whole tensors; in a
  // single process it does nothing (a warning). Default: kNone.
  BATON_ARG(Sharding, sharding) = Sharding::kNone;
  // Under kFull, the modules whose parameters are gathered together around their forward and
  // backward: {"auto"}, the model's repeated blocks (gpt's, a ResNet's stages' blocks); else module
  // kinds ({"Block"}). The parameters of no unit stay whole. Default: {"auto"}.
  BATON_ARG(std::vector<std::string>, shard_unit) = {"auto"};
  // Under sharding on GPUs: each rank's shards, their gradients and the optimizer's state in host
  // memory, the step on the CPU (recipes: `offload: {optimizer: cpu}`). Refused on a CPU run and
  // without sharding. Default: false.
  BATON_ARG(bool, offload_optimizer) = false;

 public:
  TrainerOptions& device(c10::Device device) { return this->device(device.str()); }
  TrainerOptions& max_duration(std::string_view text) { return max_duration(Time::parse(text)); }
  TrainerOptions& eval_interval(std::string_view text) { return eval_interval(Time::parse(text)); }
  TrainerOptions& console_log_interval(std::string_view text) { return console_log_interval(Time::parse(text)); }
  TrainerOptions& save_interval(std::string_view text) { return save_interval(Time::parse(text)); }
  TrainerOptions& eval_dataloader(std::string name, std::shared_ptr<DataLoader> loader) {
    eval_dataloaders_.push_back(Evaluator{std::move(name), std::move(loader), {}, std::nullopt});
    return *this;
  }
  TrainerOptions& evaluator(Evaluator evaluator) {
    eval_dataloaders_.push_back(std::move(evaluator));
    return *this;
  }
};

// Throws std::invalid_argument (the reason, with the key) unless save_top_k is off, or its
// save_monitor names a metric one of the evaluators logs and save_num_checkpoints_to_keep is unset.
void check_save_top_k(const TrainerOptions& options);

// What one rank holds at the end of a fit, in bytes: its parameters, their gradients, its
// optimizers' state, and the most its process (CPU: the resident set's peak) or its GPU (the
// allocator's peak) held at once.
struct MemoryUse {
  int64_t params_bytes = 0;
  int64_t grads_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t peak_bytes = 0;
};

// What a fit took.
struct RunSummary {
  double train_s = 0.0;  // time in training steps (data, forward, backward, step), evaluation excluded
  double eval_s = 0.0;
  int64_t steps = 0;
  int64_t samples = 0;
  bool stopped_early = false;
  double train_loss = 0.0;                   // the last batch's loss (the microbatches' losses weighted by their share)
  int64_t graph_steps = 0;                   // steps replayed from CUDA graphs (cuda_graphs)
  MemoryUse memory{};                        // this rank's
  std::vector<MemoryUse> memory_per_rank{};  // every rank's, by rank (one: this process alone)
  double samples_per_s() const { return train_s > 0 ? static_cast<double>(samples) / train_s : 0.0; }
};

class Trainer {
 public:
  // Validates the options, sets threads and seed, and runs init, before_load and after_load.
  // Throws std::invalid_argument naming the option that is wrong.
  explicit Trainer(TrainerOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains until max_duration (or state().stop_training()). Callable again after raising it.
  void fit();
  // Sets a later max_duration, then fit().
  void fit(const Time& max_duration);
  // Standalone evaluation on every evaluator: eval_standalone_start … eval_standalone_end.
  // Returns the metrics by evaluator name.
  std::map<std::string, Metrics> eval();
  // The model's outputs (float) for the batches of `loader` in order: every batch, or the first
  // eval_subset_num_batches. Throws std::invalid_argument at the first batch when the outputs would
  // come to more than `max_output_bytes` (a language model's logits add up fast).
  std::vector<at::Tensor> predict(DataLoader& loader, std::uint64_t max_output_bytes = UINT64_MAX);
  // Closes the engine: every callback's close() and post_close(). Idempotent.
  void close();

  State& state();
  Logger& logger();
  Engine& engine();
  const TrainerOptions& options() const;
  const RunSummary& summary() const;
  // The batch size the train loop splits into microbatches of this many examples.
  int64_t microbatch_size() const;

  // Everything a resume needs: model, optimizers, algorithms' and callbacks' state, timestamp,
  // random generators, loss scale, evaluation metrics; only the model with `weights_only`.
  // Tensors are copies, on the run's device (a checkpoint file holds them device-free). Under
  // sharding every rank calls it together, and the optimizers' whole state is rank 0's only.
  StateDict snapshot(bool weights_only) const;
  // Logs the losses still on the device, then writes snapshot(weights_only) to `path` now (under
  // sharding: every rank calls it, rank 0 writes).
  void save_checkpoint(const std::string& path, bool weights_only = false);
  // Loads a checkpoint. Throws CheckpointError for a damaged file, std::invalid_argument naming
  // the tensor when the model does not fit it.
  void load_checkpoint(const std::string& path, bool weights_only, bool strict,
                       const std::vector<std::string>& ignore_keys = {});
  // The checkpoint the trainer started from, or "" when none.
  const std::string& loaded_from() const;

  // The device the run trains on (TrainerOptions::device resolved).
  c10::Device device() const;
  // Reads the training losses still on the device and logs them (what log_interval defers).
  // Throws std::runtime_error naming the batch whose loss is NaN or infinite.
  void flush_losses();

  // This process's rank among the data-parallel ranks, and their number (0 and 1 without).
  int rank() const;
  int world_size() const;
  // Seconds spent waiting for gradient reductions after backward (0 without data parallelism).
  double ddp_wait_seconds() const;
  // Under sharding: full, seconds the host waited for units' parameters to be gathered through MPI
  // (with NCCL the gathers run on the device, the next unit's while one computes: this counts 0).
  double gather_wait_seconds() const;

 private:
  struct Impl;  // src/train/trainer_impl.h: the loop's state and steps
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
