// The Trainer's state and the steps of its loop (private to src/train): trainer.cpp (construction,
// fit, evaluation, prediction), trainer_checkpoint.cpp (snapshots and checkpoints),
// trainer_graphs.cpp (the train step in CUDA graphs), data_parallel.cpp (the ranks).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "baton/train/trainer.h"

namespace baton {

class CheckpointSaver;
class Metric;
namespace detail {
class DataParallel;
class ShardedOptimizer;
class ShardedCheckpoint;
struct TrainGraphs;
struct ShapeGraph;
}  // namespace detail

struct Trainer::Impl {
  // The Trainer's public calls, as trainer.h says.
  explicit Impl(TrainerOptions options);
  ~Impl();
  void fit();
  void fit(const Time& max_duration);
  std::map<std::string, Metrics> eval();
  std::vector<at::Tensor> predict(DataLoader& loader, std::uint64_t max_output_bytes);
  void close();
  int64_t microbatch_size() const;
  // `optimizer_in_shards`: the optimizer's state stays in the shards (save_format: sharded).
  StateDict snapshot(bool weights_only, bool in_shards = false) const;
  void save_checkpoint(const std::string& path, bool weights_only = false);
  void load_checkpoint(const std::string& path, bool weights_only, bool strict,
                       const std::vector<std::string>& ignore_keys = {});
  void flush_losses();
  int rank() const;
  int world_size() const;
  double ddp_wait_seconds() const;
  double gather_wait_seconds() const;

  Model& current_model();
  // The model's outputs for state().batch under the run's precision (gradients as the caller set).
  at::Tensor eval_forward(Model& model);
  // Construction, step by step.
  void setup_distributed();
  void setup_state();
  void setup_activation_checkpointing();
  // Sharding (TrainerOptions::sharding): what it refuses, then each optimizer's shards.
  void check_sharding();
  void setup_sharding();
  // Whether the gradients are reduce-scattered into shards (sharding: gradients or full).
  bool sharded_gradients() const;
  // Under data parallelism, after the batch's last backward: the gradients averaged over the ranks
  // (or reduce-scattered into their shards), this rank's counting with `weight`.
  void reduce_gradients(double weight, bool find_unused);
  int64_t most_microbatches(int64_t microbatches);
  void finish_full_sharding(int64_t microbatches, int64_t most);
  void with_whole_parameters(const std::function<void()>& f) const;
  // save_format: sharded under sharding (decided at construction, before the shards exist).
  bool optimizer_in_shards() const;
  // This rank's file of the optimizer's state beside the checkpoint `path`; the index's layout.
  nlohmann::json write_optimizer_shard(const std::string& path);
  void setup_loggers(bool writes);
  void setup_saver(bool writes);
  void load_initial_state(bool writes);
  // fit(), step by step.
  bool start_fit(DataLoader& loader);
  int64_t next_batch(DataLoader& loader);
  void end_epoch();
  void end_fit();
  // What this rank holds now (RunSummary::memory), and every rank's (memory_per_rank).
  MemoryUse memory_use() const;
  std::vector<MemoryUse> memory_per_rank(const MemoryUse& mine);
  void train_batch();
  // train_batch() after before_train_batch: eager, and from a CUDA graph (trainer_graphs.cpp);
  // graph_step() returns false when this batch runs eager.
  void eager_step();
  void setup_graphs();
  bool graph_step();
  void capture(detail::ShapeGraph& shape, Model& model);
  void replay(detail::ShapeGraph& shape, Model& model);
  std::string graph_blockers();
  // Fires `event` unless the step is being captured (events fire after each replay instead).
  void fire(Event event);
  // How a microbatch's backward runs: its share of the batch, whether it is the batch's last, and
  // what the algorithms ask of autograd and of data parallelism.
  struct Backward {
    double share = 1.0;
    bool last = true;
    bool create_graph = false;
    bool find_unused = false;
  };
  void train_microbatch(Model& model, const Backward& how);
  void run_evaluators(Event event);
  void evaluate(const Evaluator& evaluator);
  void eval_batches(DataLoader& loader, Model& model, std::vector<std::unique_ptr<Metric>>& metrics);
  void reduce_over_ranks(std::vector<std::unique_ptr<Metric>>& metrics);
  const Time& interval_of(const Evaluator& evaluator) const;
  bool should_eval(Event event, const Time& every) const;
  bool done() const;
  bool out_of_time() const;        // a max_duration in seconds, reached
  double trained_seconds() const;  // this run's training time so far, this fit's included
  void set_learning_rates();
  void reapply_surgery(const std::string& path, const StateDict& sd);
  // A LoRA run's frozen base, which its checkpoints leave out (State::unsaved_model_tensors): the
  // SHA-256 of its tensors and of the Hugging Face config it was built from; null without one.
  // Made once (the base is frozen) and written into every checkpoint; a checkpoint whose base is
  // not the model's is refused (check_frozen_base).
  const std::string& frozen_base_identity() const;
  void check_frozen_base(const std::string& path, const StateDict& sd) const;
  void load_checkpoint_file(const std::string& path, bool weights_only, bool strict,
                            const std::vector<std::string>& ignore_keys);
  void setup_device();
  void backward(const at::Tensor& loss, double share, bool create_graph);
  void optimizer_step();
  bool capturable_step(const std::shared_ptr<torch::optim::Optimizer>& optimizer);

  TrainerOptions options_;
  State state_;
  std::unique_ptr<Logger> logger_;
  std::unique_ptr<Engine> engine_;
  RunSummary summary_;
  ScheduleClock clock_;
  std::vector<std::vector<double>> initial_lrs_;      // per optimizer, per param group
  std::map<std::string, int64_t> last_eval_batches_;  // by evaluator label: the batch it last ran after
  std::string loaded_from_;
  mutable std::string frozen_base_;  // frozen_base_identity's JSON, once made
  struct FitClock {
    std::chrono::steady_clock::time_point start;
    double eval_before;
  };
  std::optional<FitClock> fit_clock_;  // set while fit() runs
  bool time_reached_ = false;          // a max_duration in seconds stopped this fit
  std::shared_ptr<CheckpointSaver> saver_;
  std::unique_ptr<detail::DataParallel> ddp_;
  std::vector<std::unique_ptr<detail::ShardedOptimizer>> sharded_;  // under sharding: one an optimizer
  // A sharded checkpoint loaded whose optimizer state the shards read when they are made.
  std::shared_ptr<detail::ShardedCheckpoint> pending_shards_;
  void load_shard_states();
  double ddp_weight_ = 1.0;  // this rank's share of the current global batch
  struct PendingLoss {
    int64_t step;
    int64_t epoch;
    at::Tensor loss;  // on the device
  };
  std::vector<PendingLoss> pending_losses_;  // not yet read from the device
  void push_loss(const at::Tensor& batch_loss);
  std::unique_ptr<detail::TrainGraphs> graphs_;  // while fit() trains from CUDA graphs
  bool capturing_ = false;
  int64_t log_interval_ = 1;
};

}  // namespace baton
