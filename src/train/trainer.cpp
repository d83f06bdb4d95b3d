#include "baton/train/trainer.h"

#include <chrono>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "baton/algorithms/registry.h"
#include "baton/core/device.h"
#include "baton/loggers/progress_bar.h"
#include "baton/metrics/metrics.h"
#include "baton/optim/grad_scaler.h"
#include "baton/optim/optimizers.h"
#include "baton/train/checkpoint.h"
#include "baton/train/checkpoint_saver.h"
#include "baton/train/threads.h"
#include "cuda/cuda.h"
#include "mpi/comm.h"
#include "train/data_parallel.h"

namespace baton {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// LibTorch's errors carry a C++ stack; a user needs the first line.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

template <typename F>
auto torch_call(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw std::runtime_error(what + ": " + first_line(e.what_without_backtrace()));
  }
}

bool is_zero(const Time& t) { return t.value() == 0.0; }

// Glob match with * as the only wildcard: "model/module.f2.*" matches "model/module.f2.weight".
bool glob_match(std::string_view pattern, std::string_view name) {
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++, mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p, ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1, n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return glob_match(p, name); });
}

std::string bytes_of(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

// The random generator of a CUDA device (its state goes into checkpoints beside the CPU's).
at::Generator cuda_generator(c10::Device device) { return at::globalContext().defaultGenerator(device); }

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
bool use_nccl(const std::string& backend, c10::Device device) {
  require(backend == "auto" || backend == "nccl" || backend == "mpi",
          "TrainerOptions: ddp_backend '" + backend + "' (expected auto, nccl or mpi)");
  if (backend == "mpi") return false;
  if (backend == "auto") {
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

}  // namespace

Trainer::Trainer(TrainerOptions options) : options_(std::move(options)) {
  require(options_.model() != nullptr, "TrainerOptions: model is required");
  const TimeUnit unit = options_.max_duration().unit();
  // Tokens would never end a run: no data set here counts them.
  require(unit == TimeUnit::kEpoch || unit == TimeUnit::kBatch || unit == TimeUnit::kSample,
          "TrainerOptions: max_duration " + options_.max_duration().to_string() + " must be in ep, ba or sp");
  require(options_.max_duration().value() > 0, "TrainerOptions: max_duration must be positive");
  const TimeUnit eval_unit = options_.eval_interval().unit();
  require(
      is_zero(options_.eval_interval()) || eval_unit == TimeUnit::kEpoch || eval_unit == TimeUnit::kBatch ||
          eval_unit == TimeUnit::kSample || eval_unit == TimeUnit::kDuration,
      "TrainerOptions: eval_interval " + options_.eval_interval().to_string() + " must be in ep, ba, sp or dur (or 0)");
  require(!options_.device_train_microbatch_size() || *options_.device_train_microbatch_size() >= 1,
          "TrainerOptions: device_train_microbatch_size must be at least 1 (or auto)");
  require(options_.num_threads() >= 0, "TrainerOptions: num_threads must not be negative");
  for (const auto& [name, loader] : options_.eval_dataloaders()) {
    require(loader != nullptr, "TrainerOptions: evaluator '" + name + "' has no dataloader");
  }
  if (options_.eval_metrics().empty()) options_.eval_metrics(options_.model()->metrics());
  for (const auto& metric : options_.eval_metrics()) make_metric(metric);  // throws for unknown names

  require(!options_.log_interval() || *options_.log_interval() >= 1,
          "TrainerOptions: log_interval must be at least 1 batch (or auto)");
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
  }
  // Ranks on one machine share its cores.
  configure_threads(options_.num_threads() == 0 && ddp_ ? mpi::cores_per_local_rank() : options_.num_threads());
  torch::manual_seed(options_.seed());
  setup_device();

  if (options_.optimizers().empty()) {
    options_.optimizers({make_optimizer({.name = "decoupled_sgdw", .lr = 0.1}, options_.model()->parameters())});
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
  const bool writes = rank() == 0;  // only rank 0 logs and writes checkpoints
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

  if (!options_.save_folder().empty() && writes) {
    const TimeUnit save_unit = options_.save_interval().unit();
    require(save_unit == TimeUnit::kEpoch || save_unit == TimeUnit::kBatch || save_unit == TimeUnit::kSample,
            "TrainerOptions: save_interval " + options_.save_interval().to_string() + " must be in ep, ba or sp");
    saver_ = std::make_shared<CheckpointSaver>(
        CheckpointSaverOptions{options_.save_folder(), options_.save_interval(), options_.save_filename(),
                               options_.save_num_checkpoints_to_keep()},
        [this] {
          flush_losses();  // a NaN loss stops the run before it is saved
          return snapshot(options_.save_weights_only());
        },
        [this] { return options_.checkpoint_meta(); });
    state_.callbacks.push_back(saver_);
  }
  require(!options_.autoresume() || !options_.save_folder().empty(),
          "TrainerOptions: autoresume needs save_folder (where to look for checkpoints)");

  engine_ = std::make_unique<Engine>(state_, *logger_);
  engine_->run_event(Event::kInit);
  state_.model->to(state_.device);  // what surgery put in at init was made on the CPU
  engine_->run_event(Event::kBeforeLoad);
  if (ddp_) {
    state_.reduce_gradients = [this] {
      ddp_->prepare(current_model());
      ddp_->arm(ddp_weight_, /*find_unused=*/true);  // the gradients are all there: reduce them now
      ddp_->finish();
    };
  }
  std::string resume = options_.autoresume() && writes ? find_resumable_checkpoint(options_.save_folder()) : "";
  if (ddp_) {
    // Every rank resumes from what rank 0 found, and takes its share of every batch.
    if (options_.autoresume()) resume = ddp_->broadcast(resume);
    if (options_.train_dataloader()) options_.train_dataloader()->set_shard(ddp_->rank(), ddp_->size());
    for (const auto& [name, loader] : options_.eval_dataloaders()) loader->set_shard(ddp_->rank(), ddp_->size());
  }
  if (!resume.empty()) {
    load_checkpoint(resume, /*weights_only=*/false, /*strict=*/true);
  } else if (!options_.load_path().empty()) {
    load_checkpoint(options_.load_path(), options_.load_weights_only(), options_.load_strict(),
                    options_.load_ignore_keys());
  }
  engine_->run_event(Event::kAfterLoad);
}

// Where the run computes: determinism and TF32 for its kernels, the model and batches moved there,
// the loss scaler of amp_fp16.
void Trainer::setup_device() {
  const c10::Device device = state_.device;
  const bool deterministic = options_.deterministic();
  if (deterministic && device.is_cuda()) {
    // cuBLAS is deterministic only with a fixed workspace, set before its first handle is made.
    ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  }
  at::globalContext().setDeterministicAlgorithms(deterministic, /*warn_only=*/false);
  at::globalContext().setDeterministicCuDNN(deterministic);
  if (deterministic) at::globalContext().setBenchmarkCuDNN(false);
  if (device.is_cuda()) {
    at::globalContext().setFloat32MatmulPrecision(options_.tf32() ? "high" : "highest");
    at::globalContext().setAllowTF32CuDNN(options_.tf32());
  }
  options_.model()->to(device);
  if (options_.train_dataloader()) options_.train_dataloader()->set_device(device);
  for (const auto& [name, loader] : options_.eval_dataloaders()) loader->set_device(device);
  if (options_.precision() == Precision::kAmpFp16) state_.grad_scaler = std::make_shared<GradScaler>();
  log_interval_ = options_.log_interval().value_or(device.is_cuda() ? 50 : 1);
  if (device.is_cuda()) spdlog::info("training on {} ({})", describe(device), to_string(options_.precision()));
}

namespace {

// load_strict: false loaded only some of the model's tensors: say so, and refuse a load of none
// (names of another model: training would start from scratch believing it fine-tunes).
void report_partial_load(const std::string& path, std::size_t loaded, const std::vector<std::string>& kept) {
  std::string examples;
  for (std::size_t i = 0; i < kept.size() && i < 3; ++i) examples += (i ? ", " : "") + kept[i];
  if (kept.size() > 3) examples += ", …";
  const std::string counts =
      std::to_string(loaded) + " of the model's " + std::to_string(loaded + kept.size()) + " tensors";
  if (loaded == 0) {
    throw std::invalid_argument(path + ": none of its tensors has the name of one of this model's (" + counts +
                                " loaded; the model's are " + examples + "); is it another model's checkpoint?");
  }
  spdlog::warn("{}: loaded {}; {} kept as they were ({}) (load_strict: false)", path, counts, kept.size(), examples);
}

}  // namespace

// Algorithms that changed the model's structure (required_on_load) and that this run lacks are
// built from the checkpoint's record and applied before the weights load, so the weights fit.
void Trainer::reapply_surgery(const std::string& path, const StateDict& sd) {
  const auto it = sd.values.find("required_on_load");
  if (it == sd.values.end() || !it->is_array()) return;
  for (const auto& spec : *it) {
    const std::string name = spec.value("name", "");
    const bool present = std::any_of(state_.algorithms.begin(), state_.algorithms.end(), [&](const auto& a) {
      return a->recipe_spec().is_object() && a->recipe_spec().value("name", "") == name;
    });
    if (present || name.empty()) continue;
    std::shared_ptr<Algorithm> algorithm;
    try {
      algorithm = make_algorithm(name, spec.value("options", nlohmann::json::object()));
    } catch (const std::invalid_argument& e) {
      throw CheckpointError(path + ": cannot rebuild the model surgery it was saved with (" + e.what() + ")");
    }
    spdlog::info("{}: applying {} to the model, as the run that saved it did", path, name);
    algorithm->apply(Event::kInit, state_, *logger_);
    state_.algorithms.push_back(algorithm);
  }
}

StateDict Trainer::snapshot(bool weights_only) const {
  StateDict full = state_.state_dict();
  StateDict out;
  for (const auto& [name, tensor] : full.tensors) {
    if (weights_only && name.rfind("model/", 0) != 0) continue;
    out.tensors[name] = tensor.detach().clone();
  }
  nlohmann::json surgery = nlohmann::json::array();
  for (const auto& a : state_.algorithms) {
    if (a->required_on_load() && a->recipe_spec().is_object()) surgery.push_back(a->recipe_spec());
  }
  if (!surgery.empty()) out.values["required_on_load"] = surgery;
  if (weights_only) return out;
  for (const auto& [key, value] : full.values.items()) out.values[key] = value;
  for (std::size_t i = 0; i < state_.optimizers.size(); ++i) {
    const std::string bytes = bytes_of(*state_.optimizers[i]);
    out.tensors["optimizers/" + std::to_string(i)] =
        torch::from_blob(const_cast<char*>(bytes.data()), {static_cast<int64_t>(bytes.size())}, torch::kByte).clone();
  }
  {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    out.tensors["rng/torch"] = generator.get_state();
  }
  if (state_.device.is_cuda()) {
    auto generator = cuda_generator(state_.device);
    std::lock_guard<std::mutex> lock(generator.mutex());
    out.tensors["rng/cuda"] = generator.get_state();
  }
  if (state_.grad_scaler) out.values["grad_scaler"] = state_.grad_scaler->state_dict();
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [label, values] : state_.eval_metrics) metrics[label] = values;
  out.values["eval_metrics"] = metrics;
  // Inside fit(), the time of this fit so far counts too.
  const double train_s =
      summary_.train_s +
      (fit_clock_ ? seconds_since(fit_clock_->start) - (summary_.eval_s - fit_clock_->eval_before) : 0.0);
  out.values["summary"] = {{"train_s", train_s}, {"eval_s", summary_.eval_s}, {"train_loss", summary_.train_loss}};
  out.values["last_eval_batch"] = last_eval_batch_;
  return out;
}

void Trainer::save_checkpoint(const std::string& path, bool weights_only) {
  flush_losses();
  write_checkpoint(path, snapshot(weights_only), options_.checkpoint_meta());
}

void Trainer::load_checkpoint(const std::string& path, bool weights_only, bool strict,
                              const std::vector<std::string>& ignore_keys) {
  const CheckpointFile ckpt = read_checkpoint(path);
  const StateDict& sd = ckpt.state;
  reapply_surgery(path, sd);
  state_.model->to(state_.device);
  Model& model = current_model();
  {
    torch::NoGradGuard no_grad;
    std::set<std::string> used;
    std::vector<std::string> kept;  // the model's tensors the checkpoint has nothing for
    auto restore = [&](const std::string& name, at::Tensor target) {
      const std::string key = "model/" + name;
      if (matches_any(key, ignore_keys)) return;
      auto it = sd.tensors.find(key);
      if (it == sd.tensors.end()) {
        if (strict) throw std::invalid_argument(path + ": has no tensor '" + key + "' for this model (load_strict)");
        kept.push_back(key);
        return;
      }
      if (it->second.sizes() != target.sizes()) {
        throw std::invalid_argument(path + ": tensor '" + key + "' has shape " + c10::str(it->second.sizes()) +
                                    " but the model's is " + c10::str(target.sizes()) +
                                    "; is it another model? (load_ignore_keys skips tensors)");
      }
      target.copy_(it->second);
      used.insert(key);
    };
    for (auto& item : model.named_parameters()) restore(item.key(), item.value());
    for (auto& item : model.named_buffers()) restore(item.key(), item.value());
    if (!kept.empty()) report_partial_load(path, used.size(), kept);
    if (strict) {
      for (const auto& [name, tensor] : sd.tensors) {
        if (name.rfind("model/", 0) == 0 && !used.count(name) && !matches_any(name, ignore_keys)) {
          throw std::invalid_argument(path + ": tensor '" + name + "' is not in this model (load_strict)");
        }
      }
    }
  }
  loaded_from_ = path;
  if (weights_only) return;

  if (!sd.values.contains("timestamp"))
    throw CheckpointError(path + ": holds only weights; load it with load_weights_only");
  // Everything but the model (done above) and what this run's options decide; the algorithms' and
  // callbacks' tensors (EMA's average, …) live on the run's device, whichever one wrote them.
  StateDict rest = sd;
  for (auto& [name, tensor] : rest.tensors) {
    if (name.rfind("algorithms/", 0) == 0 || name.rfind("callbacks/", 0) == 0) tensor = tensor.to(state_.device);
  }
  for (auto& item : model.named_parameters()) rest.tensors["model/" + item.key()] = item.value();
  for (auto& item : model.named_buffers()) rest.tensors["model/" + item.key()] = item.value();
  const std::string run_name = state_.run_name;
  state_.load_state_dict(rest);
  state_.run_name = run_name;
  state_.max_duration = options_.max_duration();
  state_.precision = options_.precision();
  for (std::size_t i = 0; i < state_.optimizers.size(); ++i) {
    auto it = sd.tensors.find("optimizers/" + std::to_string(i));
    if (it == sd.tensors.end()) throw CheckpointError(path + ": has no state for optimizer " + std::to_string(i));
    const at::Tensor bytes = it->second.contiguous();
    std::istringstream in(
        std::string(static_cast<const char*>(bytes.data_ptr()), static_cast<std::size_t>(bytes.numel())));
    torch::serialize::InputArchive archive;
    try {
      archive.load_from(in, state_.device);  // momentum and the like, where this run's parameters are
      state_.optimizers[i]->load(archive);
    } catch (const c10::Error& e) {
      throw CheckpointError(path + ": optimizer " + std::to_string(i) +
                            " state does not fit this optimizer: " + first_line(e.what_without_backtrace()));
    }
  }
  if (auto it = sd.tensors.find("rng/torch"); it != sd.tensors.end()) {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(it->second);
  }
  if (auto it = sd.tensors.find("rng/cuda"); it != sd.tensors.end() && state_.device.is_cuda()) {
    auto generator = cuda_generator(state_.device);
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(it->second);
  }
  if (auto it = sd.values.find("grad_scaler"); it != sd.values.end() && state_.grad_scaler) {
    try {
      state_.grad_scaler->load_state_dict(*it);
    } catch (const std::invalid_argument& e) {
      throw CheckpointError(path + ": " + e.what());
    }
  }
  if (auto it = sd.values.find("eval_metrics"); it != sd.values.end() && it->is_object()) {
    for (const auto& [label, values] : it->items()) {
      for (const auto& [name, value] : values.items()) state_.eval_metrics[label][name] = value.get<double>();
    }
  }
  if (auto it = sd.values.find("summary"); it != sd.values.end() && it->is_object()) {
    summary_.train_s = it->value("train_s", 0.0);
    summary_.eval_s = it->value("eval_s", 0.0);
    summary_.train_loss = it->value("train_loss", 0.0);
  }
  last_eval_batch_ = sd.values.value("last_eval_batch", int64_t{-1});
  summary_.steps = state_.timestamp.batch();
  summary_.samples = state_.timestamp.sample();
}

Trainer::~Trainer() { close(); }

int Trainer::rank() const { return ddp_ ? ddp_->rank() : 0; }
int Trainer::world_size() const { return ddp_ ? ddp_->size() : 1; }
double Trainer::ddp_wait_seconds() const { return ddp_ ? ddp_->wait_seconds() : 0.0; }

Distributed parse_distributed(std::string_view text) {
  if (text == "auto") return Distributed::kAuto;
  if (text == "on") return Distributed::kOn;
  if (text == "off") return Distributed::kOff;
  throw std::invalid_argument("distributed: '" + std::string(text) + "' (expected auto, on or off)");
}

void Trainer::close() {
  if (engine_) engine_->close();
}

Model& Trainer::current_model() {
  // An algorithm may have replaced the model: use what the state holds.
  auto* model = dynamic_cast<Model*>(state_.model.get());
  if (model == nullptr) throw std::logic_error("State::model is not a baton::Model (an algorithm replaced it?)");
  return *model;
}

int64_t Trainer::microbatch_size() const {
  return options_.device_train_microbatch_size().value_or(std::numeric_limits<int64_t>::max());
}

bool Trainer::done() const {
  const Time& max = *state_.max_duration;
  return state_.timestamp.get(max.unit()) >= max;
}

bool Trainer::should_eval(Event event) const {
  const Time& every = options_.eval_interval();
  if (is_zero(every) || options_.eval_dataloaders().empty()) return false;
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

void Trainer::set_learning_rates() {
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

void Trainer::fit(const Time& max_duration) {
  options_.max_duration(max_duration);
  state_.max_duration = max_duration;
  fit();
}

void Trainer::fit() {
  require(options_.train_dataloader() != nullptr, "Trainer::fit: TrainerOptions::train_dataloader is required");
  DataLoader& loader = *options_.train_dataloader();
  require(loader.num_batches() > 0, "Trainer::fit: the training data has no complete batch");
  state_.clear_stop_request();
  summary_.stopped_early = false;
  state_.dataloader = options_.train_dataloader();
  state_.dataloader_label = "train";
  state_.dataloader_len = loader.num_batches();
  clock_.batches_per_epoch = loader.num_batches();
  clock_.batch_size = loader.batch_size();
  clock_.max_batches = state_.max_duration->unit() == TimeUnit::kToken ? 0.0 : clock_.to_batches(*state_.max_duration);
  if (done()) {
    spdlog::warn("fit: the run is already at max_duration {} ({}); raise it to train more",
                 state_.max_duration->to_string(), state_.timestamp.to_string());
    return;
  }

  const auto start = Clock::now();
  const double eval_before = summary_.eval_s;
  fit_clock_ = FitClock{start, eval_before};
  engine_->run_event(Event::kFitStart);
  if (ddp_) ddp_->broadcast_model(*state_.model);  // every rank starts from rank 0's weights
  while (!done() && !state_.stop_requested()) {
    const Timestamp& ts = state_.timestamp;
    const int64_t iteration = options_.iteration_length();
    if (ts.batch_in_epoch() == 0 && (iteration > 0 ? ts.epoch() % iteration == 0 : ts.epoch() == 0)) {
      engine_->run_event(Event::kIterationStart);
    }
    if (ts.batch_in_epoch() == 0) engine_->run_event(Event::kEpochStart);
    loader.set_position({ts.epoch(), ts.batch_in_epoch(), loader.options().seed_});
    while (loader.position().batch < loader.num_batches()) {
      const auto batch_start = Clock::now();
      engine_->run_event(Event::kBeforeDataloader);
      const int64_t index = loader.position().batch;
      {
        ScopedMarker wait(state_.profiler.get(), "dataloader/wait");
        state_.batch = *loader.next();
      }
      // What the loader gave (every rank's share of the global batch), before algorithms select or resize.
      int64_t samples = state_.batch.size();
      if (ddp_) {
        samples = loader.global_batch_samples(index);
        ddp_weight_ = static_cast<double>(loader.shard_batch_samples(index)) / static_cast<double>(samples);
      }
      state_.batch_samples = samples;
      engine_->run_event(Event::kAfterDataloader);
      engine_->run_event(Event::kBatchStart);
      train_batch();
      state_.timestamp = state_.timestamp.to_next_batch(samples, 0, seconds_since(batch_start));
      engine_->run_event(Event::kBatchEnd);
      if (should_eval(Event::kBatchEnd)) run_evaluators();
      engine_->run_event(Event::kBatchCheckpoint);
      // A stop asked for on one rank (a signal, a stopper) stops every rank after the same batch.
      if (ddp_ && ddp_->allreduce({state_.stop_requested() ? 1.0 : 0.0})[0] > 0) state_.stop_training();
      if (done() || state_.stop_requested()) break;
    }
    if (loader.position().batch >= loader.num_batches()) {
      flush_losses();  // one wait per epoch: the epoch's figures (time, progress) are the device's
      state_.timestamp = state_.timestamp.to_next_epoch();
      engine_->run_event(Event::kEpochEnd);
      if (should_eval(Event::kEpochEnd)) run_evaluators();
      engine_->run_event(Event::kEpochCheckpoint);
      if (iteration > 0 && state_.timestamp.epoch() % iteration == 0) {
        engine_->run_event(Event::kIterationEnd);
        engine_->run_event(Event::kIterationCheckpoint);
      }
    }
  }
  flush_losses();
  summary_.stopped_early = state_.stop_requested() && !done();
  if (!is_zero(options_.eval_interval()) && !options_.eval_dataloaders().empty() &&
      last_eval_batch_ != state_.timestamp.batch()) {
    run_evaluators();
  }
  engine_->run_event(Event::kFitEnd);
  summary_.train_s += seconds_since(start) - (summary_.eval_s - eval_before);
  fit_clock_.reset();
  summary_.steps = state_.timestamp.batch();
  summary_.samples = state_.timestamp.sample();
}

void Trainer::train_batch() {
  set_learning_rates();
  engine_->run_event(Event::kBeforeTrainBatch);
  for (const auto& optimizer : state_.optimizers) optimizer->zero_grad();

  const Batch full = state_.batch;
  const int64_t n = full.size();
  // Under data parallelism a rank's share of a short last batch can be empty.
  require(n > 0 || ddp_, "Trainer: an empty training batch");
  const int64_t mb = std::max<int64_t>(1, std::min(n, microbatch_size()));
  std::vector<at::Tensor> inputs, targets;
  if (n > 0) {
    inputs = full.input.split(mb);
    targets = full.target.split(mb);
  }
  state_.num_microbatches = static_cast<int64_t>(inputs.size());
  state_.microbatch_size = mb;
  bool create_graph = false, find_unused = false;
  for (const auto& a : state_.algorithms) {
    create_graph = create_graph || a->backwards_create_graph();
    find_unused = find_unused || a->find_unused_parameters();
  }

  // The batch's loss stays on the device: read when logged (flush_losses), not here.
  at::Tensor batch_loss = at::zeros({}, at::TensorOptions().dtype(at::kDouble).device(state_.device));
  Model& model = current_model();
  if (ddp_) {
    ddp_->prepare(model);
    if (inputs.empty()) {  // nothing here: this rank adds zeros
      ddp_->arm(0.0, find_unused);
      ddp_->finish();
    }
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs.size() > 1) state_.batch = {inputs[i], targets[i]};
    const double share = static_cast<double>(inputs[i].size(0)) / static_cast<double>(n);
    engine_->run_event(Event::kBeforeForward);
    {
      ScopedMarker marker(state_.profiler.get(), "forward");
      AutocastGuard autocast(state_.precision, state_.device.type());
      state_.outputs =
          torch_call("the model cannot take this batch (inputs of shape " + c10::str(state_.batch.input.sizes()) + ")",
                     [&] { return model.forward(state_.batch); });
    }
    engine_->run_event(Event::kAfterForward);
    engine_->run_event(Event::kBeforeLoss);
    {
      ScopedMarker marker(state_.profiler.get(), "loss");
      AutocastGuard autocast(state_.precision, state_.device.type());
      state_.loss = torch_call("the loss cannot be computed for outputs of shape " + c10::str(state_.outputs.sizes()),
                               [&] { return model.loss(state_.outputs, state_.batch); });
    }
    engine_->run_event(Event::kAfterLoss);
    engine_->run_event(Event::kBeforeBackward);
    const bool last = i + 1 == inputs.size();
    if (ddp_ && last) ddp_->arm(ddp_weight_, find_unused);  // buckets reduce as backward fills them
    {
      ScopedMarker marker(state_.profiler.get(), "backward");
      backward(state_.loss, share, create_graph);
    }
    if (ddp_ && last) {
      ScopedMarker marker(state_.profiler.get(), "ddp/wait");
      ddp_->finish();  // after_backward sees the averaged gradients
    }
    engine_->run_event(Event::kAfterBackward);
    batch_loss.add_(state_.loss.detach().to(at::kDouble), share);
  }
  if (inputs.size() > 1) state_.batch = full;
  if (ddp_) batch_loss = ddp_->allreduce(batch_loss * ddp_weight_);  // the global batch's loss
  pending_losses_.push_back({state_.timestamp.batch() + 1, state_.timestamp.epoch(), batch_loss});
  // Read before the step when due: a NaN loss then never reaches the weights.
  if (static_cast<int64_t>(pending_losses_.size()) >= log_interval_) flush_losses();
  if (state_.grad_scaler) {  // after_train_batch (clipping, SAM) sees the true gradients
    for (const auto& optimizer : state_.optimizers) state_.grad_scaler->unscale(*optimizer);
  }
  engine_->run_event(Event::kAfterTrainBatch);
  {
    ScopedMarker marker(state_.profiler.get(), "optimizer/step");
    optimizer_step();
  }
}

void Trainer::backward(const at::Tensor& loss, double share, bool create_graph) {
  torch_call("backward failed", [&] {
    at::Tensor scaled = loss * share;
    if (state_.grad_scaler) scaled = state_.grad_scaler->scale(scaled);
    scaled.backward({}, /*retain_graph=*/create_graph, create_graph);
    return 0;
  });
}

void Trainer::optimizer_step() {
  if (!state_.grad_scaler) {
    for (const auto& optimizer : state_.optimizers) optimizer->step();
    return;
  }
  // Skipped (and the scale halved) when a gradient overflowed.
  for (const auto& optimizer : state_.optimizers) state_.grad_scaler->step(*optimizer);
  state_.grad_scaler->update();
}

void Trainer::flush_losses() {
  if (pending_losses_.empty()) return;
  const std::vector<PendingLoss> pending = std::move(pending_losses_);
  pending_losses_.clear();
  std::vector<at::Tensor> parts;
  for (const auto& p : pending) parts.push_back(p.loss.reshape({1}));
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

at::Tensor Trainer::eval_forward(Model& model) {
  AutocastGuard autocast(state_.precision, state_.device.type());
  return torch_call("the model cannot take inputs of shape " + c10::str(state_.batch.input.sizes()),
                    [&] { return model.eval_forward(state_.batch); });
}

void Trainer::run_evaluators() {
  flush_losses();  // the training losses so far come before the evaluation's metrics
  const auto start = Clock::now();
  engine_->run_event(Event::kEvalBeforeAll);
  for (const auto& [label, loader] : options_.eval_dataloaders()) evaluate(label, *loader);
  engine_->run_event(Event::kEvalAfterAll);
  last_eval_batch_ = state_.timestamp.batch();
  summary_.eval_s += seconds_since(start);
}

void Trainer::evaluate(const std::string& label, DataLoader& loader) {
  const auto saved_loader = state_.dataloader;
  const auto saved_label = state_.dataloader_label;
  const auto saved_len = state_.dataloader_len;
  const Batch saved_batch = state_.batch;
  state_.dataloader_label = label;
  state_.dataloader_len = loader.num_batches();

  std::vector<std::unique_ptr<Metric>> metrics;
  for (const auto& name : options_.eval_metrics()) metrics.push_back(make_metric(name));
  Model& model = current_model();
  const bool was_training = model.is_training();
  model.eval();
  engine_->run_event(Event::kEvalStart);
  {
    torch::NoGradGuard no_grad;
    loader.start_epoch(0);
    int64_t seen = 0;
    while (auto batch = loader.next()) {
      if (options_.eval_subset_num_batches() >= 0 && seen++ >= options_.eval_subset_num_batches()) break;
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
  if (ddp_) {  // over the whole evaluation set, not this rank's share
    std::vector<double> sums;
    for (const auto& metric : metrics) {
      const auto m = metric->sums();
      sums.insert(sums.end(), m.begin(), m.end());
    }
    sums = ddp_->allreduce(std::move(sums));
    std::size_t at = 0;
    for (auto& metric : metrics) {
      const std::size_t k = metric->sums().size();
      metric->set_sums(std::vector<double>(sums.begin() + static_cast<std::ptrdiff_t>(at),
                                           sums.begin() + static_cast<std::ptrdiff_t>(at + k)));
      at += k;
    }
  }
  Metrics values;
  auto& stored = state_.eval_metrics[label];
  for (auto& metric : metrics) {
    const double value = metric->compute();
    stored[metric->name()] = value;
    values[label + "/" + metric->name()] = value;
  }
  logger_->log_metrics(values);
  engine_->run_event(Event::kEvalEnd);
  if (was_training) model.train();
  state_.dataloader = saved_loader;
  state_.dataloader_label = saved_label;
  state_.dataloader_len = saved_len;
  state_.batch = saved_batch;
}

std::map<std::string, Metrics> Trainer::eval() {
  require(!options_.eval_dataloaders().empty(), "Trainer::eval: no eval_dataloaders");
  const auto start = Clock::now();
  engine_->run_event(Event::kEvalStandaloneStart);
  for (const auto& [label, loader] : options_.eval_dataloaders()) evaluate(label, *loader);
  engine_->run_event(Event::kEvalStandaloneEnd);
  summary_.eval_s += seconds_since(start);
  std::map<std::string, Metrics> out;
  for (const auto& [label, loader] : options_.eval_dataloaders()) {
    for (const auto& [name, value] : state_.eval_metrics[label]) out[label][name] = value;
  }
  return out;
}

std::vector<at::Tensor> Trainer::predict(DataLoader& loader) {
  std::vector<at::Tensor> outputs;
  Model& model = current_model();
  const bool was_training = model.is_training();
  model.eval();
  engine_->run_event(Event::kPredictStart);
  {
    torch::NoGradGuard no_grad;
    loader.set_device(state_.device);
    loader.start_epoch(0);
    while (auto batch = loader.next()) {
      state_.batch = std::move(*batch);
      engine_->run_event(Event::kPredictBatchStart);
      engine_->run_event(Event::kPredictBeforeForward);
      state_.outputs = eval_forward(model);
      engine_->run_event(Event::kPredictAfterForward);
      outputs.push_back(state_.outputs.to(torch::kFloat));
      engine_->run_event(Event::kPredictBatchEnd);
    }
  }
  engine_->run_event(Event::kPredictEnd);
  if (was_training) model.train();
  return outputs;
}

}  // namespace baton
