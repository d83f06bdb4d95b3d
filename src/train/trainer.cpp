#include "baton/train/trainer.h"
#include "train/trainer_impl.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "baton/callbacks/monitors.h"
#include "baton/core/device.h"
#include "baton/core/grad_scaler.h"
#include "baton/loggers/progress_bar.h"
#include "baton/metrics/metrics.h"
#include "baton/models/checkpointing.h"
#include "baton/optim/optimizers.h"
#include "baton/train/checkpoint_saver.h"
#include "baton/train/threads.h"
#include "cuda/cuda.h"
#include "mpi/comm.h"
#include "train/data_parallel.h"
#include "train/sharded_optimizer.h"
#include "train/trainer_graphs.h"
#include "train/trainer_internal.h"

namespace baton {
namespace {

using detail::Clock;
using detail::first_line;
using detail::seconds_since;

// f(), with a LibTorch error as one line after what() (made only then: a step builds no text).
template <typename W, typename F>
auto torch_call(W&& what, F&& f) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string(what()) + ": " + first_line(e.what_without_backtrace()));
  }
}

std::string shape_of(const at::Tensor& t) { return c10::str(t.sizes()); }

bool is_zero(const Time& t) { return t.value() == 0.0; }

using detail::require;

// TrainerOptions::device resolved: under data parallelism auto and cuda take the rank's GPU.
c10::Device resolve_device(const TrainerOptions& o, bool distributed) {
  try {
    return parse_device(o.device(), distributed ? mpi::launched_local_rank() : 0);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("TrainerOptions: device ") + e.what());
  }
}

void check_precision(Precision precision, c10::Device device) {
  if (precision != Precision::kAmpFp16 || device.is_cuda()) return;
  throw std::invalid_argument(
      std::string("TrainerOptions: precision amp_fp16 needs a CUDA device, and ") +
      (cuda_built() ? "the run's device is " + device.str() : std::string("this baton's LibTorch has no CUDA")) +
      "; use amp_bf16 or fp32 on the CPU");
}

// ddp_backend resolved: NCCL for ranks on GPUs of their own when baton has it (NCCL refuses two
// ranks on one GPU).
bool use_nccl(DdpBackend backend, c10::Device device) {
  if (backend == DdpBackend::kMpi) return false;
  if (backend == DdpBackend::kAuto) {
    return device.is_cuda() && cuda::nccl_built() && mpi::launched_local_size() <= cuda_device_count();
  }
  require(device.is_cuda(),
          "TrainerOptions: ddp_backend nccl needs the ranks on GPUs (device is " + device.str() + ")");
  require(cuda::nccl_built(), "TrainerOptions: ddp_backend nccl: this baton was built without NCCL; use mpi");
  return true;
}

// The momentum of an SGD parameter group (one_cycle cycles it); nullptr for other optimizers.
double* sgd_momentum(torch::optim::OptimizerParamGroup& group) {
  auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&group.options());
  return sgd != nullptr ? &sgd->momentum() : nullptr;
}

// What the metrics need of the model: its outputs' kind and its loss (for "loss").
MetricContext metric_context(const Model& model) {
  MetricContext context;
  context.task = model.task();
  context.loss_name = model.loss_function().name();
  context.loss_per_example = [loss = model.loss_function()](const at::Tensor& outputs, const at::Tensor& targets) {
    return loss.per_example(outputs, targets);
  };
  return context;
}

}  // namespace

void check_save_top_k(const TrainerOptions& o) {
  if (o.save_top_k() < 0) throw std::invalid_argument("save_top_k must be how many of the best to keep (0: off)");
  if (o.save_top_k() == 0) return;
  if (o.save_num_checkpoints_to_keep() != -1) {
    throw std::invalid_argument(
        "save_num_checkpoints_to_keep and save_top_k: keep the newest N, or the best K and the latest, not both");
  }
  const std::string& monitor = o.save_monitor();
  const auto slash = monitor.rfind('/');
  std::string labels;
  for (const Evaluator& e : o.eval_dataloaders()) {
    labels += (labels.empty() ? "" : ", ") + e.label;
    if (slash == std::string::npos || e.label != monitor.substr(0, slash)) continue;
    std::vector<std::string> metrics = e.metrics.empty() ? o.eval_metrics() : e.metrics;
    if (metrics.empty() && o.model()) metrics = o.model()->metrics();
    const std::string metric = monitor.substr(slash + 1);
    if (std::find(metrics.begin(), metrics.end(), metric) == metrics.end()) {
      std::string logged;
      for (const auto& m : metrics) logged += (logged.empty() ? "" : ", ") + m;
      throw std::invalid_argument(std::string("save_monitor ")
                                      .append(monitor)
                                      .append(": ")
                                      .append(e.label)
                                      .append(" logs ")
                                      .append(logged)
                                      .append(", not " + metric));
    }
    return;
  }
  throw std::invalid_argument("save_monitor '" + monitor + "' must be <evaluation set>/<metric> of a set the run has" +
                              " (" + (labels.empty() ? "none" : labels) + "), such as eval/accuracy");
}

namespace {

// The options a run cannot start with (a recipe checks them too, with its file and line; these are
// for C++ callers). The evaluation metrics default to the model's.
void check_options(TrainerOptions& o) {
  require(o.model() != nullptr, "TrainerOptions: model is required");
  const TimeUnit unit = o.max_duration().unit();
  // Tokens only where the training data counts them (checked when the fit starts).
  require(unit == TimeUnit::kEpoch || unit == TimeUnit::kBatch || unit == TimeUnit::kSample ||
              unit == TimeUnit::kToken || unit == TimeUnit::kSecond,
          "TrainerOptions: max_duration " + o.max_duration().to_string() + " must be in ep, ba, sp, tok or seconds");
  require(o.max_duration().value() > 0, "TrainerOptions: max_duration must be positive");
  require(unit != TimeUnit::kSecond || o.eval_interval().unit() != TimeUnit::kDuration,
          "TrainerOptions: eval_interval in dur needs a max_duration in ep, ba, sp or tok, not a wall-clock time");
  auto check_interval = [](const Time& every, const std::string& what) {
    const TimeUnit unit = every.unit();
    require(is_zero(every) || unit == TimeUnit::kEpoch || unit == TimeUnit::kBatch || unit == TimeUnit::kSample ||
                unit == TimeUnit::kDuration,
            "TrainerOptions: " + what + " " + every.to_string() + " must be in ep, ba, sp or dur (or 0)");
  };
  check_interval(o.eval_interval(), "eval_interval");
  require(!o.device_train_microbatch_size() || *o.device_train_microbatch_size() >= 1,
          "TrainerOptions: device_train_microbatch_size must be at least 1 (or auto)");
  require(o.num_threads() >= 0, "TrainerOptions: num_threads must not be negative");
  require(o.save_num_checkpoints_to_keep() >= -1,
          "TrainerOptions: save_num_checkpoints_to_keep must be how many to keep, or -1 for every checkpoint");
  require(o.eval_subset_num_batches() >= -1,
          "TrainerOptions: eval_subset_num_batches must be a number of batches, or -1 for every batch");
  if (o.eval_metrics().empty()) o.eval_metrics(o.model()->metrics());
  // Unknown names, and metrics that do not fit the model's outputs, throw here.
  for (const auto& metric : o.eval_metrics()) make_metric(metric, metric_context(*o.model()));
  std::set<std::string> labels;
  for (const Evaluator& e : o.eval_dataloaders()) {
    require(e.loader != nullptr, "TrainerOptions: evaluator '" + e.label + "' has no dataloader");
    require(labels.insert(e.label).second, "TrainerOptions: two evaluators are labelled '" + e.label + "'");
    if (e.interval) check_interval(*e.interval, "evaluator '" + e.label + "' interval");
    for (const auto& metric : e.metrics) make_metric(metric, metric_context(*o.model()));
  }
  require(!o.log_interval() || *o.log_interval() >= 1,
          "TrainerOptions: log_interval must be at least 1 batch (or auto)");
  require(!o.autoresume() || !o.save_folder().empty(),
          "TrainerOptions: autoresume needs save_folder (where to look for checkpoints)");
  try {
    check_save_top_k(o);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("TrainerOptions: ") + e.what());
  }
}

}  // namespace

Trainer::Impl::Impl(TrainerOptions options) : options_(std::move(options)) {
  check_options(options_);
  setup_distributed();
  torch::manual_seed(options_.seed());
  setup_device();
  setup_state();
  const bool writes = rank() == 0;  // only rank 0 logs and writes checkpoints
  setup_loggers(writes);
  // Under sharding every rank takes part in each checkpoint (the shards are gathered); rank 0 writes.
  const bool sharded = ddp_ && options_.sharding() != Sharding::kNone;
  if (!options_.save_folder().empty() && (writes || sharded)) setup_saver(writes);
  engine_ = std::make_unique<Engine>(state_, *logger_);
  engine_->run_event(Event::kInit);
  check_sharding();
  setup_activation_checkpointing();  // after init's surgery: the blocks it put in are the units
  state_.model->to(state_.device);   // what surgery put in at init was made on the CPU
  engine_->run_event(Event::kBeforeLoad);
  load_initial_state(writes);
  engine_->run_event(Event::kAfterLoad);
  setup_sharding();  // the shards take the weights and optimizer state loaded
}

// The blocks whose activations backward recomputes (TrainerOptions::activation_checkpointing).
void Trainer::Impl::setup_activation_checkpointing() {
  const std::vector<std::string>& kinds = options_.activation_checkpointing();
  if (kinds.empty()) return;
  const int units = checkpoint_activations(*state_.model, kinds);
  std::string names;
  for (const auto& kind : kinds) names += (names.empty() ? "" : ", ") + kind;
  spdlog::info("activation_checkpointing: {} blocks ({}) recompute their activations in backward", units, names);
}

// Data parallelism when asked for, or in auto when launched by mpirun with more than one rank; the
// threads (ranks on one machine share its cores).
void Trainer::Impl::setup_distributed() {
  const bool distributed = options_.distributed() == Distributed::kOn ||
                           (options_.distributed() == Distributed::kAuto && mpi::launched_size() > 1);
  state_.device = resolve_device(options_, distributed);
  check_precision(options_.precision(), state_.device);
  if (distributed) {
    require(options_.ddp_bucket_mb() > 0, "TrainerOptions: ddp_bucket_mb must be positive");
    const bool nccl = use_nccl(options_.ddp_backend(), state_.device);
    ddp_ = std::make_unique<detail::DataParallel>(static_cast<int64_t>(options_.ddp_bucket_mb() * 1024 * 1024),
                                                  options_.ddp_overlap(), state_.device, nccl);
    if (ddp_->size() == 1 && options_.distributed() == Distributed::kAuto) ddp_.reset();
    if (ddp_ && ddp_->size() == 1 && mpi::launched_size() <= 1) {  // asked for, and alone: never silently
      spdlog::warn(
          "distributed: on, but this process was not started by mpirun or srun: data parallelism over 1 rank "
          "(start it with mpirun -n N, or set distributed: auto)");
    }
  }
  configure_threads(options_.num_threads() == 0 && ddp_ ? mpi::cores_per_local_rank() : options_.num_threads());
  if (ddp_) {
    state_.reduce_gradients = [this] {
      ddp_->prepare(current_model());
      ddp_->arm(ddp_weight_, /*find_unused=*/true);  // the gradients are all there: reduce them now
      ddp_->finish();
    };
  }
}

// The state the loop works on, from the options (SGDW when no optimizer is given), and each
// parameter group's initial learning rate, which the schedulers scale.
void Trainer::Impl::setup_state() {
  if (options_.optimizers().empty()) {
    options_.optimizers(
        {make_optimizer(OptimizerOptions().name("decoupled_sgdw").lr(0.1), options_.model()->parameters())});
  }
  for (const auto& optimizer : options_.optimizers()) {
    std::vector<double> lrs;
    for (auto& group : optimizer->param_groups()) lrs.push_back(group.options().get_lr());
    initial_lrs_.push_back(std::move(lrs));
  }
  state_.model = options_.model();
  state_.optimizers = options_.optimizers();
  state_.schedulers = options_.schedulers();
  state_.algorithms = options_.algorithms();
  state_.max_duration = options_.max_duration();
  state_.precision = options_.precision();
  state_.run_name = options_.run_name().empty()
                        ? "run-" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                      std::chrono::system_clock::now().time_since_epoch())
                                                      .count())
                        : options_.run_name();
  state_.callbacks = options_.callbacks();
}

// Rank 0's loggers (the options', the progress bar, the console); the other ranks log nothing.
void Trainer::Impl::setup_loggers(bool writes) {
  std::vector<std::shared_ptr<LoggerDestination>> loggers;
  if (writes) loggers = options_.loggers();
  std::shared_ptr<ProgressBar> bar;
  if (options_.progress_bar() && writes) {
    // Under mpirun a rank's output may be a pseudo-terminal even when the job's goes to a file:
    // one line per epoch there, no redraws.
    bar = std::make_shared<ProgressBar>(stdout, mpi::launched() ? std::optional<bool>(false) : std::nullopt);
    loggers.push_back(bar);
  }
  if (!is_zero(options_.console_log_interval()) && writes) {
    loggers.push_back(std::make_shared<ConsoleLogger>(options_.console_log_interval(), stdout, bar.get()));
  }
  for (const auto& logger : loggers) state_.callbacks.push_back(logger);
  logger_ = std::make_unique<Logger>(state_, loggers);
  if (!options_.hyperparameters().empty()) logger_->log_hyperparameters(options_.hyperparameters());
}

namespace {

// save_mode auto: lower is better for losses and errors.
bool save_greater_is_better(const TrainerOptions& o) {
  if (o.save_mode() != SaveMode::kAuto) return o.save_mode() == SaveMode::kMax;
  const std::string metric = o.save_monitor().substr(o.save_monitor().rfind('/') + 1);
  for (const char* lower : {"loss", "error", "mse", "mae", "perplexity"}) {
    if (metric.find(lower) != std::string::npos) return false;
  }
  return true;
}

}  // namespace

// The trainer's own checkpoint saver (the save_* options), a callback like the others.
void Trainer::Impl::setup_saver(bool writes) {
  const TimeUnit save_unit = options_.save_interval().unit();
  require(save_unit == TimeUnit::kEpoch || save_unit == TimeUnit::kBatch || save_unit == TimeUnit::kSample,
          "TrainerOptions: save_interval " + options_.save_interval().to_string() + " must be in ep, ba or sp");
  saver_ = std::make_shared<CheckpointSaver>(
      CheckpointSaverOptions()
          .folder(options_.save_folder())
          .interval(options_.save_interval())
          .filename(options_.save_filename())
          .num_checkpoints_to_keep(options_.save_num_checkpoints_to_keep())
          .top_k(options_.save_top_k())
          .monitor(options_.save_monitor())
          .greater_is_better(save_greater_is_better(options_))
          .write(writes),
      [this] {
        flush_losses();  // a NaN loss stops the run before it is saved
        return snapshot(options_.save_weights_only(), optimizer_in_shards());
      },
      [this] { return options_.checkpoint_meta(); });
  if (optimizer_in_shards()) {
    saver_->set_shard_writer([this](const std::string& path) { return write_optimizer_shard(path); });
  }
  state_.callbacks.push_back(saver_);
}

// Where the run starts: the newest good checkpoint (autoresume; every rank takes what rank 0
// found), else load_path. Under data parallelism each rank takes its share of every batch.
void Trainer::Impl::load_initial_state(bool writes) {
  std::string resume = options_.autoresume() && writes
                           ? find_resumable_checkpoint(options_.save_folder(), options_.save_filename())
                           : "";
  if (ddp_) {
    if (options_.autoresume()) resume = ddp_->broadcast(resume);
    if (options_.train_dataloader()) options_.train_dataloader()->set_shard(ddp_->rank(), ddp_->size());
    for (const Evaluator& e : options_.eval_dataloaders()) e.loader->set_shard(ddp_->rank(), ddp_->size());
  }
  if (!resume.empty()) {
    load_checkpoint(resume, /*weights_only=*/false, /*strict=*/true);
    if (saver_) saver_->adopt_existing();  // num_checkpoints_to_keep counts those of before the resume
  } else if (!options_.load_path().empty()) {
    load_checkpoint(options_.load_path(), options_.load_weights_only(), options_.load_strict(),
                    options_.load_ignore_keys());
  }
}

// Where the run computes: determinism and TF32 for its kernels, the model and batches moved there,
// the loss scaler of amp_fp16.
void Trainer::Impl::setup_device() {
  const c10::Device device = state_.device;
  const bool deterministic = options_.deterministic();
  if (deterministic && device.is_cuda()) {
    // cuBLAS is deterministic only with a fixed workspace, read at its first handle: too late to set
    // it here (libbaton does when it loads); refuse a value that cannot work.
    const std::string problem = cublas_workspace_problem(std::getenv("CUBLAS_WORKSPACE_CONFIG"));
    require(problem.empty(), "TrainerOptions: deterministic: " + problem);
  }
  at::globalContext().setDeterministicAlgorithms(deterministic, /*warn_only=*/false);
  at::globalContext().setDeterministicCuDNN(deterministic);
  if (deterministic) at::globalContext().setBenchmarkCuDNN(false);
  if (device.is_cuda()) {
    at::globalContext().setFloat32MatmulPrecision(options_.tf32().value_or(false) ? "high" : "highest");
    at::globalContext().setAllowTF32CuDNN(options_.tf32().value_or(true));
  }
  options_.model()->to(device);
  if (options_.train_dataloader()) options_.train_dataloader()->set_device(device);
  for (const Evaluator& e : options_.eval_dataloaders()) e.loader->set_device(device);
  if (options_.precision() == Precision::kAmpFp16) state_.grad_scaler = std::make_shared<GradScaler>();
  log_interval_ = options_.log_interval().value_or(device.is_cuda() ? 50 : 1);
  require(
      options_.cuda_graphs() != CudaGraphs::kOn || device.is_cuda(),
      "TrainerOptions: cuda_graphs on needs a CUDA device (the run's device is " + device.str() + "); use auto or off");
  if (device.is_cuda()) spdlog::info("training on {} ({})", describe(device), to_string(options_.precision()));
}

Trainer::Impl::~Impl() { close(); }

int Trainer::Impl::rank() const { return ddp_ ? ddp_->rank() : 0; }
int Trainer::Impl::world_size() const { return ddp_ ? ddp_->size() : 1; }
double Trainer::Impl::ddp_wait_seconds() const { return ddp_ ? ddp_->wait_seconds() : 0.0; }

double Trainer::Impl::gather_wait_seconds() const {
  double seconds = 0.0;
  for (const auto& s : sharded_) seconds += s->wait_seconds();
  return seconds;
}

Distributed parse_distributed(std::string_view text) {
  if (auto value = from_name<Distributed>(std::string(text))) return *value;
  throw std::invalid_argument("distributed: '" + std::string(text) + "' (expected auto, on or off)");
}

CudaGraphs parse_cuda_graphs(std::string_view text) {
  if (auto value = from_name<CudaGraphs>(std::string(text))) return *value;
  throw std::invalid_argument("cuda_graphs: '" + std::string(text) + "' (expected auto, on or off)");
}

void Trainer::Impl::close() {
  if (engine_) engine_->close();
}

Model& Trainer::Impl::current_model() {
  // An algorithm may have replaced the model: use what the state holds.
  auto* model = dynamic_cast<Model*>(state_.model.get());
  if (model == nullptr) throw std::logic_error("State::model is not a baton::Model (an algorithm replaced it?)");
  return *model;
}

int64_t Trainer::Impl::microbatch_size() const {
  return options_.device_train_microbatch_size().value_or(std::numeric_limits<int64_t>::max());
}

double Trainer::Impl::trained_seconds() const {
  return summary_.train_s +
         (fit_clock_ ? seconds_since(fit_clock_->start) - (summary_.eval_s - fit_clock_->eval_before) : 0.0);
}

bool Trainer::Impl::done() const {
  const Time& max = *state_.max_duration;
  if (max.unit() == TimeUnit::kSecond) return time_reached_;  // decided after a batch, on every rank
  return state_.timestamp.get(max.unit()) >= max;
}

bool Trainer::Impl::out_of_time() const {
  const Time& max = *state_.max_duration;
  return max.unit() == TimeUnit::kSecond && state_.timestamp.total_wct() >= max.value();
}

const Time& Trainer::Impl::interval_of(const Evaluator& evaluator) const {
  return evaluator.interval ? *evaluator.interval : options_.eval_interval();
}

bool Trainer::Impl::should_eval(Event event, const Time& every) const {
  if (is_zero(every)) return false;
  const Timestamp& ts = state_.timestamp;
  switch (every.unit()) {
    case TimeUnit::kEpoch: return event == Event::kEpochEnd && ts.epoch() % every.count() == 0;
    case TimeUnit::kBatch: return event == Event::kBatchEnd && ts.batch() % every.count() == 0;
    case TimeUnit::kSample: {
      const int64_t n = every.count();
      return event == Event::kBatchEnd && ts.sample() / n > (ts.sample() - state_.batch_samples) / n;
    }
    case TimeUnit::kDuration: {
      const auto period = std::max<int64_t>(1, std::llround(clock_.to_batches(every)));
      return event == Event::kBatchEnd && ts.batch() % period == 0;
    }
    default: return false;
  }
}

void Trainer::Impl::set_learning_rates() {
  if (state_.schedulers.empty()) return;
  const double batch = static_cast<double>(state_.timestamp.batch());
  for (std::size_t o = 0; o < state_.optimizers.size(); ++o) {
    auto& groups = state_.optimizers[o]->param_groups();
    for (std::size_t g = 0; g < groups.size(); ++g) {
      double lr = g < initial_lrs_[o].size() ? initial_lrs_[o][g] : groups[g].options().get_lr();
      std::optional<double> momentum;
      for (const auto& scheduler : state_.schedulers) {
        lr = scheduler->lr(lr, batch, clock_);
        if (auto m = scheduler->momentum(batch, clock_)) momentum = m;
      }
      groups[g].options().set_lr(lr);
      if (double* slot = sgd_momentum(groups[g]); momentum && slot != nullptr) *slot = *momentum;
    }
  }
}

void Trainer::Impl::fit(const Time& max_duration) {
  options_.max_duration(max_duration);
  state_.max_duration = max_duration;
  fit();
}

void Trainer::Impl::fit() {
  require(options_.train_dataloader() != nullptr, "Trainer::fit: TrainerOptions::train_dataloader is required");
  DataLoader& loader = *options_.train_dataloader();
  if (!start_fit(loader)) return;
  const int64_t iteration = options_.iteration_length();
  while (!done() && !state_.stop_requested()) {
    const Timestamp& ts = state_.timestamp;
    if (ts.batch_in_epoch() == 0 && (iteration > 0 ? ts.epoch() % iteration == 0 : ts.epoch() == 0)) {
      engine_->run_event(Event::kIterationStart);
    }
    if (ts.batch_in_epoch() == 0) engine_->run_event(Event::kEpochStart);
    loader.set_position({ts.epoch(), ts.batch_in_epoch(), loader.options().seed()});
    while (loader.position().batch < loader.num_batches()) {
      const auto batch_start = Clock::now();
      const int64_t samples = next_batch(loader);
      engine_->run_event(Event::kBatchStart);
      train_batch();
      state_.timestamp =
          state_.timestamp.to_next_batch(samples, samples * clock_.tokens_per_sample, seconds_since(batch_start));
      engine_->run_event(Event::kBatchEnd);
      run_evaluators(Event::kBatchEnd);
      engine_->run_event(Event::kBatchCheckpoint);
      // Wall-clock time: a stop like a stopper's, so that every rank stops after the same batch.
      if (out_of_time()) {
        time_reached_ = true;
        state_.stop_training();
        spdlog::info("max_duration {} of training reached at {} ({:.1f} s)", state_.max_duration->to_string(),
                     state_.timestamp.to_string(), state_.timestamp.total_wct());
      }
      // A stop asked for on one rank (a signal, a stopper) stops every rank after the same batch.
      if (ddp_ && ddp_->allreduce({state_.stop_requested() ? 1.0 : 0.0})[0] > 0) state_.stop_training();
      if (done() || state_.stop_requested()) break;
    }
    if (loader.position().batch >= loader.num_batches()) end_epoch();
  }
  end_fit();
}

// The clock and the state of a fit over `loader`; false (and a warning) when the run is already
// at max_duration.
bool Trainer::Impl::start_fit(DataLoader& loader) {
  require(loader.num_batches() > 0, "Trainer::fit: the training data has no complete batch");
  state_.clear_stop_request();
  summary_.stopped_early = false;
  state_.dataloader = options_.train_dataloader();
  state_.dataloader_label = "train";
  state_.dataloader_len = loader.num_batches();
  clock_.batches_per_epoch = loader.num_batches();
  clock_.batch_size = loader.batch_size();
  clock_.tokens_per_sample = loader.dataset()->tokens_per_example();
  require(state_.max_duration->unit() != TimeUnit::kToken || clock_.tokens_per_sample > 0,
          "Trainer::fit: max_duration " + state_.max_duration->to_string() +
              " counts tokens, but the training data are not windows of tokens: use ep, ba or sp");
  // A wall-clock max_duration has no length in batches: a schedule in dur is refused then.
  clock_.max_batches = state_.max_duration->unit() == TimeUnit::kSecond ? 0.0 : clock_.to_batches(*state_.max_duration);
  time_reached_ = false;
  if (done() || out_of_time()) {
    spdlog::warn("fit: the run is already at max_duration {} ({}); raise it to train more",
                 state_.max_duration->to_string(), state_.timestamp.to_string());
    return false;
  }
  fit_clock_ = FitClock{Clock::now(), summary_.eval_s};
  engine_->run_event(Event::kFitStart);
  if (ddp_) ddp_->broadcast_model(*state_.model);        // every rank starts from rank 0's weights
  for (const auto& s : sharded_) s->shard_parameters();  // full sharding: each rank keeps its shards
  setup_graphs();
  return true;
}

// The next batch into state().batch; returns how many samples the loader gave (every rank's share
// of the global batch), before algorithms select or resize.
int64_t Trainer::Impl::next_batch(DataLoader& loader) {
  engine_->run_event(Event::kBeforeDataloader);
  const int64_t index = loader.position().batch;
  {
    ScopedMarker wait(state_.profiler.get(), "dataloader/wait");
    state_.batch = *loader.next();
  }
  int64_t samples = state_.batch.size();
  if (ddp_) {
    samples = loader.global_batch_samples(index);
    ddp_weight_ = static_cast<double>(loader.shard_batch_samples(index)) / static_cast<double>(samples);
  }
  state_.batch_samples = samples;
  engine_->run_event(Event::kAfterDataloader);
  return samples;
}

void Trainer::Impl::end_epoch() {
  flush_losses();  // one wait per epoch: the epoch's figures (time, progress) are the device's
  state_.timestamp = state_.timestamp.to_next_epoch();
  engine_->run_event(Event::kEpochEnd);
  run_evaluators(Event::kEpochEnd);
  engine_->run_event(Event::kEpochCheckpoint);
  const int64_t iteration = options_.iteration_length();
  if (iteration > 0 && state_.timestamp.epoch() % iteration == 0) {
    engine_->run_event(Event::kIterationEnd);
    engine_->run_event(Event::kIterationCheckpoint);
  }
}

// The last evaluation (unless the run just had one), fit_end, and the summary's figures.
void Trainer::Impl::end_fit() {
  graphs_.reset();
  flush_losses();
  summary_.memory = memory_use();  // the last step's gradients are still there
  summary_.memory_per_rank = memory_per_rank(summary_.memory);
  for (const auto& s : sharded_) s->gather_parameters();  // full sharding: the trained model whole
  summary_.stopped_early = state_.stop_requested() && !done();
  run_evaluators(Event::kFitEnd);
  engine_->run_event(Event::kFitEnd);
  summary_.train_s += seconds_since(fit_clock_->start) - (summary_.eval_s - fit_clock_->eval_before);
  fit_clock_.reset();
  summary_.steps = state_.timestamp.batch();
  summary_.samples = state_.timestamp.sample();
}

MemoryUse Trainer::Impl::memory_use() const {
  const auto bytes = [](const at::Tensor& t) {
    return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : int64_t{0};
  };
  MemoryUse m;
  std::set<const void*> seen;  // a tied weight is held once
  const bool full = state_.sharding == Sharding::kFull;
  for (const auto& p : state_.model->parameters()) {
    if (!seen.insert(p.unsafeGetTensorImpl()).second) continue;
    if (!full) m.params_bytes += bytes(p);  // full sharding: the shards and the whole chunks, below
    m.grads_bytes += bytes(p.grad());
  }
  for (const auto& optimizer : state_.optimizers) m.optimizer_bytes += optimizer_state_bytes(*optimizer);
  for (const auto& s : sharded_) {  // this rank's shards of the state (and of the gradients)
    if (full) m.params_bytes += s->parameter_bytes();
    m.optimizer_bytes += s->state_bytes();
    for (const auto& g : s->gradient_shards()) m.grads_bytes += bytes(g);
  }
  const auto device = device_memory(state_.device);
  m.peak_bytes = device ? device->peak : static_cast<int64_t>(MemoryMonitor::peak_rss_mb() * 1024.0 * 1024.0);
  return m;
}

std::vector<MemoryUse> Trainer::Impl::memory_per_rank(const MemoryUse& mine) {
  if (!ddp_) return {mine};
  const auto size = static_cast<std::size_t>(ddp_->size()), at = static_cast<std::size_t>(ddp_->rank()) * 4;
  std::vector<double> all(size * 4, 0.0);  // each rank's four figures in its place; exact below 2^53
  all[at] = static_cast<double>(mine.params_bytes);
  all[at + 1] = static_cast<double>(mine.grads_bytes);
  all[at + 2] = static_cast<double>(mine.optimizer_bytes);
  all[at + 3] = static_cast<double>(mine.peak_bytes);
  all = ddp_->allreduce(all);
  std::vector<MemoryUse> out(size);
  for (std::size_t r = 0; r < size; ++r) {
    out[r] = {static_cast<int64_t>(all[r * 4]), static_cast<int64_t>(all[r * 4 + 1]),
              static_cast<int64_t>(all[r * 4 + 2]), static_cast<int64_t>(all[r * 4 + 3])};
  }
  return out;
}

void Trainer::Impl::train_batch() {
  set_learning_rates();
  engine_->run_event(Event::kBeforeTrainBatch);
  if (graphs_ && graph_step()) return;
  eager_step();
}

void Trainer::Impl::eager_step() {
  // Gradients set to none, as PyTorch's zero_grad does by default (LibTorch 1.13's zeroes them): a
  // parameter that gets no gradient in a step (a block StochasticDepth dropped) is then left alone
  // by the optimizer, as it is after a resume, where no gradient is saved; momentum does not move it.
  for (const auto& optimizer : state_.optimizers) {
    for (auto& group : optimizer->param_groups()) {
      for (auto& p : group.params()) p.mutable_grad().reset();
    }
  }

  const Batch whole = state_.batch;
  const int64_t n = whole.size();
  // Under data parallelism a rank's share of a short last batch can be empty.
  require(n > 0 || ddp_, "Trainer: an empty training batch");
  const int64_t mb = std::max<int64_t>(1, std::min(n, microbatch_size()));
  std::vector<at::Tensor> inputs, targets;
  if (n > mb) {
    inputs = whole.input.split(mb);
    targets = whole.target.split(mb);
  } else if (n > 0) {  // one microbatch: the batch itself, no views
    inputs = {whole.input};
    targets = {whole.target};
  }
  state_.num_microbatches = static_cast<int64_t>(inputs.size());
  state_.microbatch_size = mb;
  Backward how;
  for (const auto& a : state_.algorithms) {
    how.create_graph = how.create_graph || a->backwards_create_graph();
    how.find_unused = how.find_unused || a->find_unused_parameters();
  }
  // The batch's loss stays on the device: read when logged (flush_losses), not here. One
  // microbatch's is its loss as it is (no kernel); several add up their shares in float64.
  at::Tensor batch_loss;
  Model& model = current_model();
  const bool full = state_.sharding == Sharding::kFull;
  if (ddp_) {
    if (!sharded_gradients()) ddp_->prepare(model);
    for (const auto& s : sharded_) s->set_gradient_weight(ddp_weight_);
    if (inputs.empty() && !full) reduce_gradients(0.0, how.find_unused);  // nothing here: this rank adds zeros
  }
  const int64_t most = full ? most_microbatches(static_cast<int64_t>(inputs.size())) : 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs.size() > 1) state_.batch = {inputs[i], targets[i]};
    how.share = static_cast<double>(inputs[i].size(0)) / static_cast<double>(n);
    how.last = i + 1 == inputs.size();
    train_microbatch(model, how);
    if (inputs.size() == 1) {
      batch_loss = state_.loss.detach();
    } else {
      if (i == 0) batch_loss = at::zeros({}, at::TensorOptions().dtype(at::kDouble).device(state_.device));
      batch_loss.add_(state_.loss.detach().to(at::kDouble), how.share);
    }
  }
  if (full) finish_full_sharding(static_cast<int64_t>(inputs.size()), most);
  if (inputs.size() > 1) state_.batch = whole;
  if (!batch_loss.defined()) batch_loss = at::zeros({}, at::TensorOptions().dtype(at::kDouble).device(state_.device));
  if (ddp_) batch_loss = ddp_->allreduce(batch_loss.to(at::kDouble) * ddp_weight_);  // the global batch's loss
  push_loss(batch_loss);
  if (state_.grad_scaler) {  // after_train_batch (clipping, SAM) sees the true gradients
    for (const auto& optimizer : state_.optimizers) state_.grad_scaler->unscale(*optimizer);
  }
  engine_->run_event(Event::kAfterTrainBatch);
  {
    ScopedMarker marker(state_.profiler.get(), "optimizer/step");
    optimizer_step();
  }
}

// The batch's loss (on the device) joins those to log; read now when due (before the optimizer
// step of an eager batch: a NaN loss then never reaches the weights).
void Trainer::Impl::push_loss(const at::Tensor& batch_loss) {
  pending_losses_.push_back({state_.timestamp.batch() + 1, state_.timestamp.epoch(), batch_loss});
  if (static_cast<int64_t>(pending_losses_.size()) >= log_interval_) flush_losses();
}

void Trainer::Impl::fire(Event event) {
  if (!capturing_) engine_->run_event(event);
}

// Forward, loss and backward of state().batch (one microbatch), with their events; under data
// parallelism the last microbatch's backward reduces the gradients as it fills the buckets.
void Trainer::Impl::train_microbatch(Model& model, const Backward& how) {
  fire(Event::kBeforeForward);
  {
    ScopedMarker marker(state_.profiler.get(), "forward");
    AutocastGuard autocast(state_.precision, state_.device.type());
    state_.outputs = torch_call(
        [&] { return "the model cannot take this batch (inputs of shape " + shape_of(state_.batch.input) + ")"; },
        [&] { return model.forward(state_.batch); });
  }
  fire(Event::kAfterForward);
  fire(Event::kBeforeLoss);
  {
    ScopedMarker marker(state_.profiler.get(), "loss");
    AutocastGuard autocast(state_.precision, state_.device.type());
    state_.loss =
        torch_call([&] { return "the loss cannot be computed for outputs of shape " + shape_of(state_.outputs); },
                   [&] { return model.loss(state_.outputs, state_.batch); });
  }
  fire(Event::kAfterLoss);
  fire(Event::kBeforeBackward);
  // Buckets reduce as backward fills them; sharded gradients are reduce-scattered after it.
  if (ddp_ && how.last && !sharded_gradients()) ddp_->arm(ddp_weight_, how.find_unused);
  {
    ScopedMarker marker(state_.profiler.get(), "backward");
    backward(state_.loss, how.share, how.create_graph);
  }
  if (ddp_ && how.last && state_.sharding != Sharding::kFull) {  // full: after every rank's last (eager_step)
    ScopedMarker marker(state_.profiler.get(), "ddp/wait");
    if (sharded_gradients()) {
      reduce_gradients(ddp_weight_, how.find_unused);
    } else {
      ddp_->finish();  // after_backward sees the averaged gradients
    }
  }
  fire(Event::kAfterBackward);
}

void Trainer::Impl::backward(const at::Tensor& loss, double share, bool create_graph) {
  torch_call([] { return "backward failed"; },
             [&] {
               at::Tensor scaled = share == 1.0 ? loss : loss * share;  // one microbatch: no multiply by 1
               if (state_.grad_scaler) scaled = state_.grad_scaler->scale(scaled);
               scaled.backward({}, /*retain_graph=*/create_graph, create_graph);
               return 0;
             });
}

void Trainer::Impl::optimizer_step() {
  if (!sharded_.empty()) {  // each rank steps its shards, then gathers the weights
    for (const auto& s : sharded_) s->step();
    return;
  }
  if (!state_.grad_scaler) {
    for (const auto& optimizer : state_.optimizers) {
      if (graphs_ && capturable_step(optimizer)) continue;  // the replays' arithmetic (trainer_graphs.cpp)
      optimizer->step();
    }
    return;
  }
  // Skipped (and the scale halved) when a gradient overflowed.
  for (const auto& optimizer : state_.optimizers) state_.grad_scaler->step(*optimizer);
  state_.grad_scaler->update();
}

void Trainer::Impl::flush_losses() {
  if (pending_losses_.empty()) return;
  const std::vector<PendingLoss> pending = std::move(pending_losses_);
  pending_losses_.clear();
  std::vector<at::Tensor> parts;
  parts.reserve(pending.size());
  // Losses of one type are joined as they are; of several (a model changed its loss's), in float64.
  const bool one_type = std::all_of(pending.begin(), pending.end(), [&](const PendingLoss& p) {
    return p.loss.scalar_type() == pending[0].loss.scalar_type();
  });
  for (const auto& p : pending) parts.push_back(one_type ? p.loss.reshape({1}) : p.loss.reshape({1}).to(at::kDouble));
  const at::Tensor values = torch::cat(parts).to(at::kCPU, at::kDouble).contiguous();  // the one wait
  const double* loss = values.data_ptr<double>();
  for (std::size_t i = 0; i < pending.size(); ++i) {
    if (!std::isfinite(loss[i])) {
      throw std::runtime_error("train/loss is " + std::to_string(loss[i]) + " at batch " +
                               std::to_string(pending[i].step) + " (epoch " + std::to_string(pending[i].epoch) +
                               "); lower the learning rate or check the data for NaN/Inf");
    }
    logger_->log_metrics({{"train/loss", loss[i]}}, pending[i].step);
  }
  summary_.train_loss = loss[pending.size() - 1];
  if (state_.grad_scaler) {
    logger_->log_metrics({{"amp/loss_scale", state_.grad_scaler->get_scale()},
                          {"amp/skipped_steps", static_cast<double>(state_.grad_scaler->skipped_steps())}},
                         pending.back().step);
  }
}

at::Tensor Trainer::Impl::eval_forward(Model& model) {
  AutocastGuard autocast(state_.precision, state_.device.type());
  return torch_call([&] { return "the model cannot take inputs of shape " + shape_of(state_.batch.input); },
                    [&] { return model.eval_forward(state_.batch); });
}

// The evaluators due after `event`, each at its own interval (at fit_end: every one with an interval
// that has not evaluated this batch), between eval_before_all and eval_after_all.
void Trainer::Impl::run_evaluators(Event event) {
  std::vector<const Evaluator*> due;
  for (const Evaluator& e : options_.eval_dataloaders()) {
    const Time& every = interval_of(e);
    const auto last = last_eval_batches_.find(e.label);
    const bool evaluated_now = last != last_eval_batches_.end() && last->second == state_.timestamp.batch();
    if (event == Event::kFitEnd ? !is_zero(every) && !evaluated_now : should_eval(event, every)) due.push_back(&e);
  }
  if (due.empty()) return;
  flush_losses();  // the training losses so far come before the evaluation's metrics
  const auto start = Clock::now();
  with_whole_parameters([&] {  // full sharding: the units' parameters gathered for the evaluation
    engine_->run_event(Event::kEvalBeforeAll);
    for (const Evaluator* e : due) {
      evaluate(*e);
      last_eval_batches_[e->label] = state_.timestamp.batch();
    }
    engine_->run_event(Event::kEvalAfterAll);
  });
  summary_.eval_s += seconds_since(start);
}

namespace {

// While an evaluation runs: the training loader's place in State (its label and length), the
// training batch and the model's mode, restored when it ends, also when something throws.
class EvalScope {
 public:
  EvalScope(State& state, Model& model, const std::string& label, int64_t batches)
      : state_(state),
        model_(model),
        loader_(state.dataloader),
        label_(state.dataloader_label),
        len_(state.dataloader_len),
        batch_(state.batch),
        was_training_(model.is_training()) {
    state.dataloader_label = label;
    state.dataloader_len = batches;
    model.eval();
  }
  ~EvalScope() {
    if (was_training_) model_.train();
    state_.dataloader = loader_;
    state_.dataloader_label = label_;
    state_.dataloader_len = len_;
    state_.batch = batch_;
  }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  State& state_;
  Model& model_;
  std::shared_ptr<BatchSource> loader_;
  std::string label_;
  std::optional<int64_t> len_;
  Batch batch_;
  bool was_training_;
};

}  // namespace

void Trainer::Impl::evaluate(const Evaluator& evaluator) {
  Model& model = current_model();
  const std::string& label = evaluator.label;
  DataLoader& loader = *evaluator.loader;
  const EvalScope scope(state_, model, label, loader.num_batches());
  std::vector<std::unique_ptr<Metric>> metrics;
  for (const auto& name : evaluator.metrics.empty() ? options_.eval_metrics() : evaluator.metrics) {
    metrics.push_back(make_metric(name, metric_context(model)));
  }
  engine_->run_event(Event::kEvalStart);
  eval_batches(loader, model, metrics);
  if (ddp_) reduce_over_ranks(metrics);
  Metrics values;
  auto& stored = state_.eval_metrics[label];
  for (auto& metric : metrics) {
    if (metric->is_table()) {  // a file in the run folder, not a number
      if (rank() == 0)
        logger_->log_table(label + "/" + metric->name(), Table{metric->table(), loader.dataset()->class_names()});
      continue;
    }
    const double value = metric->compute();
    stored[metric->name()] = value;
    values[label + "/" + metric->name()] = value;
  }
  logger_->log_metrics(values);
  engine_->run_event(Event::kEvalEnd);
}

namespace {

// Refuses, at the first batch, outputs that would come to more than `most` bytes in all (a language
// model's logits: examples x positions x vocabulary), before they fill the memory and the disk.
void check_output_bytes(const at::Tensor& first, int64_t batches, std::uint64_t most) {
  const auto per_batch = static_cast<double>(first.nbytes());
  const double total = per_batch * static_cast<double>(batches);
  if (total <= static_cast<double>(most)) return;
  const auto mib = [](double bytes) { return std::to_string(static_cast<int64_t>(std::ceil(bytes / (1 << 20)))); };
  throw std::invalid_argument("predict: the outputs would be about " + mib(total) + " MiB (" + mib(per_batch) +
                              " MiB a batch of shape " + c10::str(first.sizes()) + " x " + std::to_string(batches) +
                              " batches), more than the " + mib(static_cast<double>(most)) +
                              " MiB allowed: predict fewer examples (eval_subset_num_batches) or allow more");
}

}  // namespace

void Trainer::Impl::eval_batches(DataLoader& loader, Model& model, std::vector<std::unique_ptr<Metric>>& metrics) {
  torch::NoGradGuard no_grad;
  loader.start_epoch(0);
  const int64_t limit = options_.eval_subset_num_batches();
  for (int64_t seen = 0; limit < 0 || seen < limit; ++seen) {  // (a batch past the limit is not made)
    std::optional<Batch> batch = loader.next();
    if (!batch) break;
    state_.batch = std::move(*batch);
    if (state_.batch.size() == 0) continue;  // this rank's share of a short batch
    engine_->run_event(Event::kEvalBatchStart);
    engine_->run_event(Event::kEvalBeforeForward);
    state_.outputs = eval_forward(model);
    engine_->run_event(Event::kEvalAfterForward);
    for (auto& metric : metrics) metric->update(state_.outputs.to(torch::kFloat), state_.batch.target);
    engine_->run_event(Event::kEvalBatchEnd);
  }
}

// The metrics over the whole evaluation set, not this rank's share: their sums added over the ranks
// (a rank's shorter list, classes it never saw, padded with zeros), or for a metric whose state
// cannot be added (AUROC's scores), every rank's state one after another. Two reductions: every
// rank's lengths, then the values.
void Trainer::Impl::reduce_over_ranks(std::vector<std::unique_ptr<Metric>>& metrics) {
  const auto world = static_cast<std::size_t>(ddp_->size());
  const auto me = static_cast<std::size_t>(ddp_->rank());
  std::vector<std::vector<double>> mine;
  std::vector<double> lengths(metrics.size() * world, 0.0);
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    mine.push_back(metrics[i]->sums());
    lengths[i * world + me] = static_cast<double>(mine.back().size());
  }
  lengths = ddp_->allreduce(std::move(lengths));
  std::vector<double> values;
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // each metric's [start, length) in values
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    const auto rank_length = [&](std::size_t r) {
      return static_cast<std::size_t>(std::llround(lengths[i * world + r]));
    };
    std::size_t length = 0;
    std::size_t offset = 0;  // where this rank's state goes (concatenated)
    for (std::size_t r = 0; r < world; ++r) {
      if (metrics[i]->concatenated()) {
        if (r < me) offset += rank_length(r);
        length += rank_length(r);
      } else {
        length = std::max(length, rank_length(r));
      }
    }
    spans.emplace_back(values.size(), length);
    values.resize(values.size() + length, 0.0);
    std::copy(mine[i].begin(), mine[i].end(),
              values.begin() + static_cast<std::ptrdiff_t>(spans.back().first + offset));
  }
  values = ddp_->allreduce(std::move(values));
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    const auto begin = values.begin() + static_cast<std::ptrdiff_t>(spans[i].first);
    metrics[i]->set_sums(std::vector<double>(begin, begin + static_cast<std::ptrdiff_t>(spans[i].second)));
  }
}

std::map<std::string, Metrics> Trainer::Impl::eval() {
  require(!options_.eval_dataloaders().empty(), "Trainer::eval: no eval_dataloaders");
  const auto start = Clock::now();
  engine_->run_event(Event::kEvalStandaloneStart);
  for (const Evaluator& e : options_.eval_dataloaders()) evaluate(e);
  engine_->run_event(Event::kEvalStandaloneEnd);
  summary_.eval_s += seconds_since(start);
  std::map<std::string, Metrics> out;
  for (const Evaluator& e : options_.eval_dataloaders()) {
    for (const auto& [name, value] : state_.eval_metrics[e.label]) out[e.label][name] = value;
  }
  return out;
}

std::vector<at::Tensor> Trainer::Impl::predict(DataLoader& loader, std::uint64_t max_output_bytes) {
  std::vector<at::Tensor> outputs;
  Model& model = current_model();
  const bool was_training = model.is_training();
  model.eval();
  engine_->run_event(Event::kPredictStart);
  {
    torch::NoGradGuard no_grad;
    loader.set_device(state_.device);
    loader.start_epoch(0);
    const int64_t limit = options_.eval_subset_num_batches();
    const int64_t batches = limit < 0 ? loader.num_batches() : std::min(limit, loader.num_batches());
    for (int64_t seen = 0; seen < batches; ++seen) {
      auto batch = loader.next();
      if (!batch) break;
      state_.batch = std::move(*batch);
      engine_->run_event(Event::kPredictBatchStart);
      engine_->run_event(Event::kPredictBeforeForward);
      state_.outputs = eval_forward(model);
      engine_->run_event(Event::kPredictAfterForward);
      outputs.push_back(state_.outputs.to(torch::kFloat));
      engine_->run_event(Event::kPredictBatchEnd);
      check_output_bytes(outputs.front(), batches, max_output_bytes);
    }
  }
  engine_->run_event(Event::kPredictEnd);
  if (was_training) model.train();
  return outputs;
}

// ---- the public calls (trainer.h) --------------------------------------------------------------

Trainer::Trainer(TrainerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Trainer::~Trainer() = default;
void Trainer::fit() { impl_->fit(); }
void Trainer::fit(const Time& max_duration) { impl_->fit(max_duration); }
std::map<std::string, Metrics> Trainer::eval() { return impl_->eval(); }
std::vector<at::Tensor> Trainer::predict(DataLoader& loader, std::uint64_t max_output_bytes) {
  return impl_->predict(loader, max_output_bytes);
}
void Trainer::close() { impl_->close(); }
State& Trainer::state() { return impl_->state_; }
Logger& Trainer::logger() { return *impl_->logger_; }
Engine& Trainer::engine() { return *impl_->engine_; }
const TrainerOptions& Trainer::options() const { return impl_->options_; }
const RunSummary& Trainer::summary() const { return impl_->summary_; }
int64_t Trainer::microbatch_size() const { return impl_->microbatch_size(); }
StateDict Trainer::snapshot(bool weights_only) const { return impl_->snapshot(weights_only); }
void Trainer::save_checkpoint(const std::string& path, bool weights_only) {
  impl_->save_checkpoint(path, weights_only);
}
void Trainer::load_checkpoint(const std::string& path, bool weights_only, bool strict,
                              const std::vector<std::string>& ignore_keys) {
  impl_->load_checkpoint(path, weights_only, strict, ignore_keys);
}
const std::string& Trainer::loaded_from() const { return impl_->loaded_from_; }
c10::Device Trainer::device() const { return impl_->state_.device; }
void Trainer::flush_losses() { impl_->flush_losses(); }
int Trainer::rank() const { return impl_->rank(); }
int Trainer::world_size() const { return impl_->world_size(); }
double Trainer::ddp_wait_seconds() const { return impl_->ddp_wait_seconds(); }
double Trainer::gather_wait_seconds() const { return impl_->gather_wait_seconds(); }

}  // namespace baton
