#include "baton/train/recipe.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include "recipe_section.h"
#include "train/data_sets.h"

#include "baton/algorithms/algorithms.h"
#include "baton/algorithms/registry.h"
#include "baton/callbacks/registry.h"
#include "baton/core/device.h"
#include "baton/core/options.h"
#include "baton/data/text.h"
#include "baton/io/file.h"
#include "baton/loggers/registry.h"
#include "baton/metrics/metrics.h"
#include "baton/models/hf.h"
#include "baton/models/loss.h"
#include "baton/models/safetensors.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/checkpoint_saver.h"
#include "baton/train/threads.h"
#include "core/yaml_json.h"
#include "mpi/comm.h"
#include "train/trainer_internal.h"

namespace baton {

using recipe_detail::recipe_reader;

namespace {

// A recipe section of named components with options ({mixup: {alpha: 0.2}, channels_last: }),
// each built by `make` from its options' reader, in the recipe's order; errors point at the
// component or option.
template <typename T, typename Make>
std::vector<std::shared_ptr<T>> build_named(OptionReader& top, const std::string& key, const std::string& example,
                                            Make make) {
  std::vector<std::shared_ptr<T>> out;
  if (!top.has(key)) return out;
  if (!top.json()[key].is_object()) top.fail(key, "expected a mapping of names to their options, e.g. " + example);
  const OptionReader section = top.child(key);
  for (const std::string& name : section.keys()) {
    if (section.json()[name] == false) continue;  // switched off: name: false
    OptionReader options = section.child(name);
    try {
      out.push_back(make(name, options));
    } catch (const std::invalid_argument& e) {  // an unknown name
      section.fail_at_key(name, e.what());
    }
  }
  return out;
}

// loss: a name (Loss::names()) or one name's options
// ({smooth_l1: {beta: 0.5}}). Default cross_entropy.
Loss read_loss(OptionReader& top) {
  if (!top.has("loss")) return Loss();
  const nlohmann::json& spec = top.json()["loss"];
  std::string name;
  double beta = 1.0;
  if (spec.is_string()) {
    name = spec.get<std::string>();
  } else if (spec.is_object() && spec.size() == 1) {
    name = spec.begin().key();
    if (!spec.begin().value().is_null()) {
      OptionReader options = top.child("loss").child(name);
      beta = options.number("beta", beta);
      options.finish();
      if (name != "smooth_l1" && options.has("beta"))
        top.fail("loss", "beta is smooth_l1's option, not " + name + "'s");
    }
  } else {
    top.fail("loss", "expected a loss's name (" + join_names(Loss::names()) +
                         ") or one name with its options ({smooth_l1: {beta: 0.5}})");
  }
  try {
    return Loss::named(name, beta);
  } catch (const std::invalid_argument& e) {
    top.fail("loss", e.what());
  }
}

// How often to evaluate (eval_interval, or an evaluation set's interval): ep, ba, sp or dur; 0: never.
Time read_eval_interval(OptionReader& r, const std::string& key, const Time& fallback) {
  const Time every = r.time(key, fallback, /*zero_means_none=*/true);
  const TimeUnit unit = every.unit();
  if (every.value() != 0 && unit != TimeUnit::kEpoch && unit != TimeUnit::kBatch && unit != TimeUnit::kSample &&
      unit != TimeUnit::kDuration) {
    r.fail(key, "'" + r.get<std::string>(key, "") + "' must be in ep, ba, sp or dur (or 0: never)");
  }
  return every;
}

// eval_metrics (or an evaluation set's metrics, `key` of `top`): names (accuracy, f1, ...) or a name
// with its options ({f1: {average: micro}}: f1_micro), each fitting the loss's outputs.
std::vector<std::string> read_metric_names(OptionReader& top, const std::string& key, const Loss& loss) {
  const nlohmann::json& list = top.json()[key];
  if (!list.is_array()) top.fail(key, "expected a list of metrics, e.g. [accuracy, f1, {f1: {average: micro}}]");
  std::vector<std::string> names;
  for (const auto& item : list) {
    if (item.is_string()) {
      names.push_back(item.get<std::string>());
      continue;
    }
    if (!item.is_object() || item.size() != 1) {
      top.fail(key, "'" + item.dump() + "': expected a metric's name or {NAME: {average: macro|micro|binary}}");
    }
    const std::string name = item.begin().key();
    const nlohmann::json& options = item.begin().value();
    if (options.is_null()) {
      names.push_back(name);
    } else if (options.is_object() && options.size() == 1 && options.contains("average") &&
               options["average"].is_string()) {
      names.push_back(name + "_" + options["average"].get<std::string>());
    } else {
      top.fail(key,
               "'" + item.dump() + "': the one option of precision, recall and f1 is average (macro, micro or binary)");
    }
  }
  MetricContext context;
  context.task = loss.task();
  context.loss_name = loss.name();
  for (const auto& metric : names) {
    try {
      make_metric(metric, context);
    } catch (const std::invalid_argument& e) {
      top.fail(key, e.what());
    }
  }
  return names;
}

// An evaluation set of the recipe's `eval:` section, logged as eval/NAME/METRIC: where its data are
// (the data set kind's keys), its metrics and interval (unset: eval_metrics, eval_interval).
struct EvalSetSpec {
  std::string name;
  OptionReader keys;
  std::vector<std::string> metrics;
  std::optional<Time> interval;
};

// The `eval:` section's sets, their metrics and intervals checked before any data is read.
std::vector<EvalSetSpec> read_eval_sets(OptionReader& top, const Loss& loss) {
  std::vector<EvalSetSpec> sets;
  if (!top.has("eval")) return sets;
  const char* example = "{val: {inputs: val_x.npy, labels: val_y.npy, metrics: [accuracy], interval: 500ba}}";
  if (!top.json()["eval"].is_object()) {  // {}: none (a --set that removes the recipe's)
    top.fail("eval", std::string("expected evaluation sets by name, e.g. ") + example);
  }
  OptionReader eval = top.child("eval");
  for (const std::string& name : eval.keys()) {
    const bool plain = std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
    });
    if (!plain || name.empty() || name == "." || name == "..") {  // "": eval//accuracy
      eval.fail_at_key(name, "an evaluation set's name is letters, digits, '_', '-' or '.' (it is logged as eval/" +
                                 name + "/METRIC)");
    }
    if (!eval.json()[name].is_object()) eval.fail(name, std::string("expected the set's keys, e.g. ") + example);
    EvalSetSpec set{name, eval.child(name), {}, std::nullopt};
    if (set.keys.has("metrics")) set.metrics = read_metric_names(set.keys, "metrics", loss);
    if (set.keys.has("interval")) set.interval = read_eval_interval(set.keys, "interval", Time::from_epoch(1));
    sets.push_back(std::move(set));
  }
  return sets;
}

// The data section: the data sets (on `device` when data.on_device says so), their targets as the
// loss needs them; the `eval:` section's sets in the data set kind's keys.
// A fused trial (`fused` given) takes the sets the first trial of the same data section loaded.
void load_data(OptionReader& data, uint64_t seed, const c10::Device& device, const Loss& loss,
               std::vector<EvalSetSpec>& eval_sets, TrainingRun& run, FusedData* fused) {
  DataSetContext context{seed, loss.float_targets(), {}};
  nlohmann::json key = {{"data", data.json()},
                        {"seed", seed},
                        {"float_targets", loss.float_targets()},
                        {"device", device.str()},
                        {"eval", nlohmann::json::object()}};
  for (EvalSetSpec& set : eval_sets) {
    context.eval_sets.push_back(EvalSetKeys{set.name, &set.keys});
    key["eval"][set.name] = set.keys.json();
  }
  auto load = [&] {
    DataSplit split = load_data_sets(data, context);
    return FusedData::Sets{std::move(split.train), std::move(split.eval), std::move(split.named_evals), {}};
  };
  FusedData::Sets sets = fused ? fused->sets(key.dump(), load) : load();
  run.train_data = std::move(sets.train);
  run.eval_data = std::move(sets.eval);
  run.eval_sets = std::move(sets.named_evals);
  run.shared_batches = std::move(sets.streams);
  if (data.get<bool>("on_device", false) && !device.is_cpu()) {  // gathered there, no copy per batch
    auto on_device = [&](const std::shared_ptr<Dataset>& d) -> std::shared_ptr<Dataset> {
      auto tensors = std::dynamic_pointer_cast<TensorDataset>(d);
      auto text = std::dynamic_pointer_cast<TextDataset>(d);
      if (!tensors && !text) data.fail("on_device", "this data set is not held in memory as tensors");
      try {
        if (text) return text->to(device);
        return tensors->to(device);
      } catch (const c10::Error& e) {
        data.fail("on_device", "the data set does not fit on " + device.str() + " (" +
                                   std::string(e.what_without_backtrace()).substr(0, 200) + "); set it to false");
      }
    };
    run.train_data = on_device(run.train_data);
    if (run.eval_data) run.eval_data = on_device(run.eval_data);
    for (auto& [name, set] : run.eval_sets) set = on_device(set);
  }
}

// Under a wall-clock max_duration the run has no length in batches: what counts in fractions of it
// (dur) or spans it (one_cycle) is refused, naming the key.
void refuse_fractions_of_the_run(OptionReader& top) {
  const std::string why = "a fraction of the run (dur), but max_duration is a wall-clock time: use ep, ba or sp";
  std::function<void(const nlohmann::json&, const std::string&)> scan = [&](const nlohmann::json& v,
                                                                            const std::string& key) {
    if (v.is_string() && v.get<std::string>().size() > 3 &&
        v.get<std::string>().compare(v.get<std::string>().size() - 3, 3, "dur") == 0) {
      top.fail(key, "'" + v.get<std::string>() + "' is " + why);
    }
    if (v.is_object() || v.is_array()) {
      for (const auto& item : v) scan(item, key);
    }
  };
  for (const char* key : {"eval_interval", "scheduler", "algorithms", "callbacks"}) {
    if (top.has(key)) scan(top.json()[key], key);
  }
  if (top.has("scheduler") && top.json()["scheduler"].is_object() &&
      top.json()["scheduler"].value("name", "") == "one_cycle") {
    top.fail("scheduler", "one_cycle spans the run, but max_duration is a wall-clock time: use ep, ba or sp");
  }
}

// The loop's keys: how long, how often to evaluate and log, threads, data parallelism, the console.
void read_loop_keys(OptionReader& top, const Loss& loss, TrainerOptions& o) {
  top.read("run_name", o.run_name());
  if (top.has("run_name") && !is_plain_name(o.run_name())) {
    top.fail("run_name", "'" + o.run_name() +
                             "' must be a plain name (no '/', not '.' or '..'): it names the run's "
                             "folder under runs/; --run-dir puts a run elsewhere");
  }
  top.read("max_duration", o.max_duration());
  // Checked here, before any data is read (the trainer checks them again for C++ callers).
  {
    const TimeUnit unit = o.max_duration().unit();
    if (unit != TimeUnit::kEpoch && unit != TimeUnit::kBatch && unit != TimeUnit::kSample && unit != TimeUnit::kToken &&
        unit != TimeUnit::kSecond) {
      top.fail("max_duration", "'" + top.get<std::string>("max_duration", "") +
                                   "' must count epochs, batches, samples, tokens or wall-clock time (3ep, 500ba, "
                                   "60000sp, 10000000tok, 90s, 30m, 2h)");
    }
    if (unit == TimeUnit::kSecond) refuse_fractions_of_the_run(top);
    if (!(o.max_duration().value() > 0)) top.fail("max_duration", "must be more than 0 (3ep, 500ba, …)");
  }
  o.eval_interval(read_eval_interval(top, "eval_interval", o.eval_interval()));
  top.read("eval_subset_num_batches", o.eval_subset_num_batches());
  if (o.eval_subset_num_batches() < -1) {
    top.fail("eval_subset_num_batches", "expected a number of batches, or -1 for every batch");
  }
  top.read("iteration_length", o.iteration_length());
  if (o.iteration_length() < 0) top.fail("iteration_length", "expected a whole number of epochs (0: one iteration)");
  top.read("deterministic", o.deterministic());
  top.read("num_threads", o.num_threads());
  if (o.num_threads() < 0 || o.num_threads() > 4096) {
    top.fail("num_threads", "expected a whole number from 1 to 4096, or 0 for every core");
  }
  top.read("distributed", o.distributed());
  top.read("ddp_bucket_mb", o.ddp_bucket_mb());
  if (!(o.ddp_bucket_mb() > 0 && o.ddp_bucket_mb() <= 1e6)) {
    top.fail("ddp_bucket_mb", "must be positive and at most 1,000,000 (MiB of gradients per reduction)");
  }
  top.read("ddp_overlap", o.ddp_overlap());
  top.read("ddp_backend", o.ddp_backend());
  top.read("sharding", o.sharding());
  top.read("progress_bar", o.progress_bar());
  top.read("console_log_interval", o.console_log_interval());
  if (top.has("eval_metrics")) {
    o.eval_metrics(read_metric_names(top, "eval_metrics", loss));
  }
}

// activation_checkpointing: false, auto, or a list of module kinds (a kind alone is a list of one).
void read_activation_checkpointing(OptionReader& top, TrainerOptions& o) {
  if (!top.has("activation_checkpointing")) return;
  const nlohmann::json& value = top.json()["activation_checkpointing"];
  std::vector<std::string> kinds;
  if (value.is_boolean() && !value.get<bool>()) {
    (void)top.get<bool>("activation_checkpointing", false);
  } else if (value.is_string()) {
    kinds = {top.get<std::string>("activation_checkpointing", "")};
  } else if (value.is_array() && !value.empty()) {
    kinds = top.get<std::vector<std::string>>("activation_checkpointing", {});
  } else {
    top.fail("activation_checkpointing",
             "expected false, auto, or a list of module kinds ([Block]), got " + OptionReader::shown(value));
  }
  o.activation_checkpointing(kinds);
}

// offload: {optimizer: cpu | none}.
void read_offload(OptionReader& top, TrainerOptions& o) {
  if (!top.has("offload")) return;
  const nlohmann::json& value = top.json()["offload"];
  const bool known = value.is_object() && value.size() == 1 && value.contains("optimizer") &&
                     value["optimizer"].is_string() && (value["optimizer"] == "cpu" || value["optimizer"] == "none");
  if (!known) top.fail("offload", "expected {optimizer: cpu} or {optimizer: none}, got " + OptionReader::shown(value));
  o.offload_optimizer(value["optimizer"] == "cpu");
}

// shard_unit: auto, or a list of module kinds (a kind alone is a list of one).
void read_shard_unit(OptionReader& top, TrainerOptions& o) {
  if (!top.has("shard_unit")) return;
  const nlohmann::json& value = top.json()["shard_unit"];
  if (value.is_string()) {
    o.shard_unit({top.get<std::string>("shard_unit", "")});
  } else if (value.is_array() && !value.empty()) {
    o.shard_unit(top.get<std::vector<std::string>>("shard_unit", {}));
  } else {
    top.fail("shard_unit", "expected auto, or a list of module kinds ([Block]), got " + OptionReader::shown(value));
  }
}

// The device, the precision (auto: bfloat16 where the device has it) and CUDA graphs.
c10::Device read_device_and_precision(OptionReader& top, TrainerOptions& o) {
  top.read("device", o.device());
  c10::Device device(c10::kCPU);
  try {
    device = parse_device(o.device(), mpi::launched_size() > 1 ? mpi::launched_local_rank() : 0);
  } catch (const std::invalid_argument& e) {
    top.fail("device", e.what());
  }
  const std::string precision = top.get<std::string>("precision", "auto");
  if (precision == "auto") {  // bfloat16 where the hardware has it
    const bool bf16 = device.is_cuda() ? cuda_supports_bf16(device) : cpu_has_native_bf16();
    o.precision(bf16 ? Precision::kAmpBf16 : Precision::kFp32);
  } else {
    try {
      o.precision(parse_precision(precision));
    } catch (const std::invalid_argument& e) {
      top.fail("precision", std::string(e.what()) + " or 'auto'");
    }
  }
  if (o.precision() == Precision::kAmpFp16 && !device.is_cuda()) {
    top.fail("precision", std::string("amp_fp16 needs a CUDA device (loss scaling of float16 is a GPU's), and ") +
                              (cuda_built() ? "device is " + device.str() : "this baton's LibTorch has no CUDA") +
                              "; use amp_bf16 or fp32");
  }
  read_activation_checkpointing(top, o);
  read_shard_unit(top, o);
  read_offload(top, o);
  top.read("cuda_graphs", o.cuda_graphs());
  if (o.cuda_graphs() == CudaGraphs::kOn && !device.is_cuda()) {
    top.fail("cuda_graphs", "on needs a CUDA device (device is " + device.str() + "); use auto or off");
  }
  return device;
}

// tf32, log_interval, the save_* and load_* keys, device_train_microbatch_size.
void read_step_and_checkpoint_keys(OptionReader& top, TrainerOptions& o) {
  const std::string tf32 = top.get<std::string>("tf32", "auto");
  if (tf32 == "true" || tf32 == "false") {
    o.tf32(tf32 == "true");
  } else if (tf32 != "auto") {
    top.fail("tf32",
             "expected auto (PyTorch's defaults: convolutions in TF32, matrix products in fp32), true or "
             "false, got '" +
                 tf32 + "'");
  }
  const std::string log_interval = top.get<std::string>("log_interval", "auto");
  if (log_interval != "auto") {
    const int64_t n = top.get<int64_t>("log_interval", 0);
    if (n < 1) top.fail("log_interval", "expected a whole number of batches of at least 1, or auto");
    o.log_interval(n);
  }
  top.read("save_folder", o.save_folder());
  top.read("save_interval", o.save_interval());
  top.read("save_filename", o.save_filename());
  top.read("save_num_checkpoints_to_keep", o.save_num_checkpoints_to_keep());
  top.read("save_top_k", o.save_top_k());
  // A recipe keeps the newest few, not every epoch's (a disk filled by a long run); the library's
  // TrainerOptions keep all, as Composer's. With save_top_k, its own rule.
  if (!top.has("save_num_checkpoints_to_keep") && o.save_top_k() == 0)
    o.save_num_checkpoints_to_keep(kRecipeCheckpointsKept);
  top.read("save_monitor", o.save_monitor());
  top.read("save_mode", o.save_mode());
  if (o.save_num_checkpoints_to_keep() < -1) {
    top.fail("save_num_checkpoints_to_keep", "expected how many to keep, or -1 to keep every checkpoint");
  }
  top.read("save_weights_only", o.save_weights_only());
  top.read("save_format", o.save_format());
  top.read("load_path", o.load_path());
  top.read("load_weights_only", o.load_weights_only());
  top.read("load_strict", o.load_strict());
  if (top.has("load_ignore_keys")) o.load_ignore_keys(top.get<std::vector<std::string>>("load_ignore_keys", {}));
  {
    const TimeUnit unit = o.save_interval().unit();
    if (unit != TimeUnit::kEpoch && unit != TimeUnit::kBatch && unit != TimeUnit::kSample) {
      top.fail("save_interval", "must be in ep, ba or sp");
    }
  }
  const std::string micro = top.get<std::string>("device_train_microbatch_size", "auto");
  if (micro != "auto") {
    const int64_t n = top.get<int64_t>("device_train_microbatch_size", 0);
    if (n < 1) top.fail("device_train_microbatch_size", "expected a whole number of at least 1, or auto");
    o.device_train_microbatch_size(n);
  }
}

// The training loader, the evaluation loader when the data set has test data ("eval"), and one for
// each of the `eval:` section's sets ("eval/NAME").
// A limit on an epoch's batches, as Lightning's limit_train_batches takes it: a whole number is a
// count of batches, a fraction (0 < f <= 1.0, written with a point) that share of them.
struct BatchLimit {
  bool fraction = true;
  double value = 1.0;
  // A loader over at most the limit's batches of `loader` (at least one).
  std::shared_ptr<DataLoader> apply(std::shared_ptr<DataLoader> loader) const {
    const int64_t all = loader->num_batches();
    const int64_t n = fraction ? std::max<int64_t>(1, static_cast<int64_t>(value * static_cast<double>(all)))
                               : static_cast<int64_t>(value);
    if (n >= all) return loader;
    return std::make_shared<DataLoader>(loader->dataset(), DataLoaderOptions(loader->options()).max_batches(n));
  }
};

// Lightning's conveniences for a quick look at a run: fast_dev_run, overfit_batches,
// limit_train_batches, limit_eval_batches.
struct QuickLook {
  int64_t fast_dev_run = 0;  // batches of training and of each evaluation set; 0: off
  bool overfit = false;      // the training order fixed (no shuffle)
  BatchLimit train;
  BatchLimit eval;
};

BatchLimit read_batch_limit(OptionReader& top, const std::string& key) {
  BatchLimit limit;
  if (!top.has(key)) return limit;
  const nlohmann::json& v = top.json()[key];
  limit.fraction = !v.is_number_integer();
  limit.value = top.get<double>(key, 1.0);
  if (limit.fraction ? !(limit.value > 0.0 && limit.value <= 1.0) : limit.value < 1.0) {
    top.fail(key, "expected a number of batches (1, 2, ...) or a fraction of them (0.25; 1.0: all)");
  }
  return limit;
}

QuickLook read_quick_look(OptionReader& top) {
  QuickLook look;
  if (top.has("fast_dev_run")) {
    const nlohmann::json& v = top.json()["fast_dev_run"];
    if (v.is_boolean()) {
      look.fast_dev_run = top.get<bool>("fast_dev_run", false) ? 1 : 0;
    } else {
      look.fast_dev_run = top.get<int64_t>("fast_dev_run", 0);
      if (look.fast_dev_run < 0) top.fail("fast_dev_run", "expected true, false or a number of batches");
    }
  }
  if (top.has("overfit_batches")) {
    look.train = read_batch_limit(top, "overfit_batches");
    look.eval = look.train;
    look.overfit = true;
    for (const char* key : {"limit_train_batches", "limit_eval_batches"}) {
      if (top.has(key)) top.fail(key, "overfit_batches sets the batches already: give one or the other");
    }
  }
  if (top.has("limit_train_batches")) look.train = read_batch_limit(top, "limit_train_batches");
  if (top.has("limit_eval_batches")) look.eval = read_batch_limit(top, "limit_eval_batches");
  if (look.fast_dev_run > 0) look.train = look.eval = BatchLimit{false, static_cast<double>(look.fast_dev_run)};
  return look;
}

// fast_dev_run: N batches of training, then one evaluation of N batches of each set; no
// checkpoint, logger file or run folder (baton train prints and writes nothing else).
void apply_fast_dev_run(const QuickLook& look, TrainingRun& run) {
  if (look.fast_dev_run == 0) return;
  TrainerOptions& o = run.options;
  run.fast_dev_run = look.fast_dev_run;
  run.checkpoints = false;
  o.max_duration(Time::from_batch(look.fast_dev_run)).eval_interval(Time::from_batch(look.fast_dev_run));
  o.save_folder("").eval_subset_num_batches(-1);  // load_path is read, not written: kept
  Evaluators evaluators = o.eval_dataloaders();
  for (Evaluator& e : evaluators) e.interval.reset();
  o.eval_dataloaders(evaluators);
}

void build_loaders(OptionReader& data, uint64_t seed, std::vector<EvalSetSpec>& eval_sets, const QuickLook& look,
                   TrainingRun& run) {
  TrainerOptions& o = run.options;
  DataLoaderOptions loader;  // its defaults are the recipe's (batch_size 128: the peer's batch)
  data.read("batch_size", loader.batch_size());
  if (loader.batch_size() < 1) data.fail("batch_size", "must be at least 1");
  loader.seed(seed);
  data.read("shuffle", loader.shuffle());
  data.read("drop_last", loader.drop_last());
  data.read("prefetch", loader.prefetch());
  if (look.overfit) loader.shuffle(false);  // the same batches every epoch
  // A fused trial's loaders take the batches of their streams (made once for every trial).
  auto on_stream = [](std::shared_ptr<DataLoader> made, const std::shared_ptr<SharedBatches>& stream) {
    if (!stream) return made;
    return std::make_shared<DataLoader>(made->dataset(), DataLoaderOptions(made->options()).shared_batches(stream));
  };
  o.train_dataloader(
      on_stream(look.train.apply(std::make_shared<DataLoader>(run.train_data, loader)), run.shared_batches.train));
  const int64_t eval_batch = data.get<int64_t>("eval_batch_size", 1000);
  if (eval_batch < 1) data.fail("eval_batch_size", "must be at least 1");
  auto eval_loader = [&](const std::shared_ptr<Dataset>& set, int64_t batch,
                         const std::shared_ptr<SharedBatches>& stream) {
    return on_stream(
        look.eval.apply(std::make_shared<DataLoader>(set, DataLoaderOptions().batch_size(batch).shuffle(false))),
        stream);
  };
  if (run.eval_data) o.eval_dataloader("eval", eval_loader(run.eval_data, eval_batch, run.shared_batches.eval));
  for (std::size_t i = 0; i < eval_sets.size(); ++i) {
    EvalSetSpec& spec = eval_sets[i];
    const int64_t batch = spec.keys.get<int64_t>("batch_size", eval_batch);
    if (batch < 1) spec.keys.fail("batch_size", "must be at least 1");
    const auto stream = i < run.shared_batches.named_evals.size() ? run.shared_batches.named_evals[i] : nullptr;
    o.evaluator(Evaluator{"eval/" + spec.name, eval_loader(run.eval_sets[i].second, batch, stream), spec.metrics,
                          spec.interval});
  }
}

// The model's outputs: model.outputs, else what the targets need (K values a row: K; class indices:
// the class count, or one yes/no output for two classes under binary_cross_entropy).
int64_t model_outputs(OptionReader& model, const Dataset& data, const Loss& loss) {
  const int64_t values = data.target_values();
  int64_t outputs = values > 0 ? values : data.num_classes();
  if (values == 0 && loss.task() == TaskKind::kBinary && outputs == 2) outputs = 1;
  if (model.has("outputs")) {
    outputs = model.get<int64_t>("outputs", 0);
    if (outputs < 1 || outputs > 1000000) model.fail("outputs", "expected a number of outputs from 1 to 1,000,000");
    if (values > 0 && outputs != values) {
      model.fail("outputs", std::to_string(outputs) + ", but the labels hold " + std::to_string(values) + " value" +
                                (values == 1 ? "" : "s") + " an example (the loss compares one output with each)");
    }
  }
  return outputs;
}

// A model whose outputs the recipe does not decide (TorchScript): its outputs for two training
// examples against the loss and the labels, before anything trains (the file named).
void check_outputs_fit(OptionReader& reader, Model& model, const Dataset& data, const Loss& loss,
                       const std::string& path) {
  Batch batch = data.get_batch(torch::arange(std::min<int64_t>(2, data.size()), torch::kLong));
  batch.input = data.finish_inputs(batch.input);
  torch::NoGradGuard no_grad;
  model.eval();
  std::string problem;
  try {
    const at::Tensor outputs = model.forward(batch);
    const int64_t classes = data.num_classes();
    if (loss.task() == TaskKind::kClasses && (outputs.dim() < 2 || outputs.size(-1) < classes)) {
      problem = "outputs " + c10::str(outputs.sizes()) + ", but the labels have " + std::to_string(classes) +
                " classes (" + loss.name() + " wants [N, classes])";
    } else {
      loss(outputs, batch.target);
    }
  } catch (const c10::Error& e) {
    problem = detail::first_line(e.what_without_backtrace());
  } catch (const std::exception& e) {
    problem = e.what();
  }
  model.train();
  if (!problem.empty()) reader.fail("path", path + ": its outputs do not fit loss " + loss.name() + ": " + problem);
}

// The zoo's spec from the data (input shape, outputs) and the model keys.
void read_model_spec(OptionReader& model, const Loss& loss, TrainingRun& run) {
  run.model_name = model.get<std::string>("name", "fashion_cnn");
  ModelOptions spec = ModelOptions()
                          .input_shape(run.train_data->input_shape())
                          .num_classes(model_outputs(model, *run.train_data, loss));
  if (model.has("hidden")) spec.hidden(model.get<std::vector<int64_t>>("hidden", {}));
  model.read("layers", spec.layers());
  model.read("width", spec.width());
  model.read("heads", spec.heads());
  model.read("dropout", spec.dropout());
  model.read("mlp_ratio", spec.mlp_ratio());
  model.read("one_shot", spec.one_shot());
  if (model.has("arch")) {  // a model space's choices: the space checks them
    if (!model.json()["arch"].is_object())
      model.fail("arch", "expected a mapping of a model space's choices ({label: value})");
    spec.arch(model.json()["arch"]);
  }
  run.model_spec = spec;
}

void build_model(OptionReader& model, const Loss& loss, TrainingRun& run) {
  TrainerOptions& o = run.options;
  read_model_spec(model, loss, run);
  const ModelOptions& spec = run.model_spec;
  if (run.model_name == "torchscript" || run.model_name == "hf") {  // a model from its files
    const bool hf = run.model_name == "hf";
    if (!model.has("path")) {
      model.fail("path", hf ? "required for an hf model (the folder save_pretrained wrote: config.json and safetensors)"
                            : "required for a torchscript model (a file saved with torch.jit.save)");
    }
    run.model_path = model.get<std::string>("path", "");
    // hf: false is transformers' from_config: config.json's architecture, its initial weights.
    const bool pretrained = model.get<bool>("pretrained", true);
    if (!pretrained && !hf) model.fail("pretrained", "false is for hf models (config.json's architecture)");
    try {
      if (!hf) {
        o.model(load_torchscript_classifier(run.model_path));
      } else {
        o.model(pretrained ? load_hf_model(run.model_path) : make_hf_model(read_hf_config(run.model_path)));
      }
    } catch (const std::exception& e) {
      model.fail("path", e.what());
    }
    o.model()->set_loss_function(loss);
    check_outputs_fit(model, *o.model(), *run.train_data, loss, run.model_path);
    return;
  }
  try {
    o.model(make_model(run.model_name, spec));
  } catch (const OptionError& e) {
    model.fail(e.key(), e.what());
  } catch (const std::invalid_argument& e) {
    model.fail("name", std::string(e.what()) + ", or torchscript or hf with model.path");
  } catch (const c10::Error& e) {  // sizes LibTorch refuses: a message of ours, not its own
    model.fail("name", "cannot build model '" + run.model_name + "' with these options (" +
                           detail::first_line(e.what_without_backtrace()) + ")");
  } catch (const std::bad_alloc&) {
    model.fail("name", "model '" + run.model_name + "' does not fit in memory with these options");
  }
  o.model()->set_loss_function(loss);
  // Starting weights (a torchvision ResNet's, say), before any surgery: the names are the network's.
  if (model.has("weights")) {
    const std::string path = model.get<std::string>("weights", "");
    if (!is_safetensors(path)) {
      model.fail("weights", path + ": " +
                                (file_kind(path) == "a regular file" ? "not a safetensors file" : file_kind(path)) +
                                " (model.weights takes FILE.safetensors)");
    }
    try {
      load_safetensors(*o.model(), path);
    } catch (const std::runtime_error& e) {
      model.fail("weights", e.what());
    }
  }
}

void build_optimizer(OptionReader& opt, TrainerOptions& o) {
  OptimizerOptions os;
  // A recipe that names no optimizer gets one that learns on most models without tuning (AdamW at
  // 1e-3, PyTorch's defaults); a section that names one starts from the keys' defaults below.
  if (opt.json().is_null() || (opt.json().is_object() && opt.json().empty()))
    os.name("adamw").lr(1e-3).weight_decay(0.01);
  opt.read("name", os.name());
  opt.read("lr", os.lr());
  opt.read("momentum", os.momentum());
  opt.read("dampening", os.dampening());
  opt.read("nesterov", os.nesterov());
  opt.read("weight_decay", os.weight_decay());
  opt.read("beta1", os.beta1());
  opt.read("beta2", os.beta2());
  opt.read("eps", os.eps());
  opt.read("fused", os.fused());
  try {
    o.optimizers({make_optimizer(os, o.model()->parameters())});
  } catch (const OptionError& e) {
    opt.fail(e.key(), e.what());
  } catch (const std::invalid_argument& e) {
    opt.fail("name", e.what());
  }
}

// Algorithms, callbacks (the trainer's own checkpoint saver takes its options) and the names of the
// loggers that write into the run folder.
void build_plugins(OptionReader& top, TrainingRun& run) {
  TrainerOptions& o = run.options;
  // Algorithms and callbacks, in the recipe's order.
  o.algorithms(build_named<Algorithm>(top, "algorithms", "{label_smoothing: {smoothing: 0.1}, channels_last: }",
                                      [](const std::string& n, OptionReader& r) { return make_algorithm(n, r); }));
  o.callbacks(build_named<Callback>(top, "callbacks", "{threshold_stopper: {monitor: eval/accuracy, threshold: 0.91}}",
                                    [&](const std::string& n, OptionReader& r) -> std::shared_ptr<Callback> {
                                      if (n != "checkpoint_saver") return make_callback(n, r);
                                      // The trainer's own saver: its options are the save_* keys.
                                      o.save_interval(r.time("interval", o.save_interval()));
                                      o.save_filename(r.text("filename", o.save_filename()));
                                      o.save_num_checkpoints_to_keep(static_cast<int>(
                                          r.integer("num_checkpoints_to_keep", o.save_num_checkpoints_to_keep())));
                                      o.save_weights_only(r.boolean("weights_only", o.save_weights_only()));
                                      o.save_top_k(static_cast<int>(r.integer("top_k", o.save_top_k())));
                                      o.save_monitor(r.text("monitor", o.save_monitor()));
                                      r.read("mode", o.save_mode());
                                      r.finish();
                                      return nullptr;
                                    }));
  {
    auto callbacks = o.callbacks();
    callbacks.erase(std::remove(callbacks.begin(), callbacks.end(), nullptr), callbacks.end());
    o.callbacks(callbacks);
  }
  try {  // before anything trains: a bad name would lose checkpoints
    check_checkpoint_filename(o.save_filename());
  } catch (const std::invalid_argument& e) {
    top.fail("save_filename", e.what());
  }
  run.checkpoints = !(top.has("callbacks") && top.json()["callbacks"].is_object() &&
                      top.json()["callbacks"].value("checkpoint_saver", nlohmann::json()) == false);
  // Loggers that write into the run directory: built by whoever knows it (baton train).
  build_named<int>(top, "loggers", "{jsonl: , csv: , tensorboard: , mlflow: {tracking_uri: http://127.0.0.1:5000}}",
                   [&](const std::string& n, OptionReader& r) {
                     check_run_logger(n, r);
                     run.loggers.emplace_back(n, r.json());
                     return std::shared_ptr<int>();
                   });
  if (!top.has("loggers")) run.loggers = {{"jsonl", nlohmann::json()}};  // metrics.jsonl when nothing is said
}

void build_scheduler(OptionReader& sch, TrainerOptions& o) {
  SchedulerOptions ss;
  sch.read("name", ss.name());
  sch.read("alpha", ss.alpha());
  sch.read("alpha_i", ss.alpha_i());
  sch.read("alpha_f", ss.alpha_f());
  sch.read("gamma", ss.gamma());
  sch.read("power", ss.power());
  sch.read("t_max", ss.t_max());
  sch.read("t_warmup", ss.t_warmup());
  sch.read("step_size", ss.step_size());
  sch.read("milestones", ss.milestones());
  sch.read("decay_period", ss.decay_period());
  sch.read("t_decay", ss.t_decay());
  sch.read("decay_shape", ss.decay_shape());
  if (sch.has("max_lr")) ss.max_lr(sch.get<double>("max_lr", 0.0));
  sch.read("pct_start", ss.pct_start());
  sch.read("div_factor", ss.div_factor());
  sch.read("final_div_factor", ss.final_div_factor());
  sch.read("cycle_momentum", ss.cycle_momentum());
  sch.read("base_momentum", ss.base_momentum());
  sch.read("max_momentum", ss.max_momentum());
  try {
    o.schedulers({make_scheduler(ss)});
  } catch (const OptionError& e) {
    sch.fail(e.key(), e.what());
  } catch (const std::invalid_argument& e) {
    sch.fail("name", e.what());
  }
}

// memory_format: auto (channels-last on the CPU for the zoo's convolutional models: LibTorch's CPU
// convolutions and max pooling run faster in NHWC), channels_last (the channels_last algorithm,
// added unless listed) or contiguous. Not auto for a TorchScript model, whose forward may view
// its activations as NCHW.
void read_memory_format(OptionReader& top, const c10::Device& device, TrainingRun& run) {
  TrainerOptions& o = run.options;
  const std::string format = top.get<std::string>("memory_format", "auto");
  if (format != "auto" && format != "channels_last" && format != "contiguous") {
    top.fail("memory_format", "expected auto, channels_last or contiguous, got '" + format + "'");
  }
  auto algorithms = o.algorithms();
  const bool listed = std::any_of(algorithms.begin(), algorithms.end(),
                                  [](const auto& a) { return std::dynamic_pointer_cast<ChannelsLast>(a) != nullptr; });
  if (format == "contiguous" && listed) {
    top.fail("memory_format", "contiguous, but algorithms has channels_last: remove one of the two");
  }
  const auto params = o.model()->parameters();
  const bool conv = std::any_of(params.begin(), params.end(), [](const at::Tensor& p) { return p.dim() == 4; });
  const bool nhwc = listed || format == "channels_last" ||
                    (format == "auto" && device.is_cpu() && run.model_name != "torchscript" && conv);
  if (nhwc && !listed) {
    algorithms.push_back(std::make_shared<ChannelsLast>());
    o.algorithms(algorithms);
  }
  run.memory_format = nhwc ? "channels_last" : "contiguous";
}

// The loss against what the data set's targets are: values for mse, l1 and smooth_l1; values or
// classes (one-hot) for binary_cross_entropy, but not token windows.
void check_targets(OptionReader& top, OptionReader& data, const Loss& loss, const Dataset& train) {
  const std::string kind = data.get<std::string>("dataset", "fashion_mnist");
  if (loss.task() == TaskKind::kRegression && train.target_values() == 0) {
    top.fail("loss",
             loss.name() + " compares values, but data.dataset " + kind +
                 " gives class indices; use cross_entropy, or data.dataset files with float labels ([N] or [N, K])");
  }
  if (loss.task() == TaskKind::kBinary &&
      (train.tokens_per_example() > 0 || (train.target_values() == 0 && train.num_classes() == 0))) {
    top.fail("loss",
             "binary_cross_entropy needs 0/1 labels or classes, but data.dataset " + kind +
                 (train.tokens_per_example() > 0 ? " is token windows (next-token prediction): use cross_entropy"
                                                 : " gives none"));
  }
  if (loss.task() == TaskKind::kClasses && train.num_classes() == 1) {
    // The key that gave the labels, as this kind of data set names it.
    const std::string key = kind == "images"       ? (data.has("train_list") ? "train_list" : "train_dir")
                            : kind == "webdataset" ? "train_shards"
                            : kind == "files"      ? "train_labels"
                                                   : "dataset";
    const std::string why = kind == "images" && key == "train_dir"
                                ? "one class folder: cross_entropy needs two classes at least (a folder a class)"
                                : "every label is class 0: cross_entropy needs two classes at least";
    data.fail(key, why + (kind == "files" ? " (values? set loss: mse)" : ""));
  }
  const auto* tensors = dynamic_cast<const TensorDataset*>(&train);
  if (loss.task() == TaskKind::kBinary && tensors != nullptr && train.target_values() > 0) {
    const at::Tensor& y = tensors->targets();
    if (y.numel() > 0 && (y.min().item<double>() < 0.0 || y.max().item<double>() > 1.0)) {
      data.fail("train_labels",
                "binary_cross_entropy compares probabilities: labels must be from 0 to 1, found " +
                    std::to_string(y.min().item<double>() < 0.0 ? y.min().item<double>() : y.max().item<double>()));
    }
  }
}

// What build_run reads before the data's loaders: the seed, the loss, the loop, the quick look,
// the device and the data sets.
struct RunStart {
  Loss loss;
  c10::Device device;
};

RunStart read_up_to_the_data(OptionReader& top, OptionReader& data, std::vector<EvalSetSpec>& eval_sets,
                             QuickLook& look, TrainingRun& run, FusedData* fused) {
  TrainerOptions& o = run.options;
  const uint64_t seed = top.get<uint64_t>("seed", o.seed());
  o.seed(seed);
  // LibTorch seeds its generator at random in each process: seed before the model is built, so
  // that the same recipe starts from the same weights.
  torch::manual_seed(seed);
  Loss loss = read_loss(top);  // first: which metrics fit, how the labels are read
  read_loop_keys(top, loss, o);
  eval_sets = read_eval_sets(top, loss);
  look = read_quick_look(top);
  // The device first: what auto precision picks and where data.on_device puts the data set.
  const c10::Device device = read_device_and_precision(top, o);
  run.precision_chosen = top.get<std::string>("precision", "auto") != "auto";
  read_step_and_checkpoint_keys(top, o);
  load_data(data, seed, device, loss, eval_sets, run, fused);
  check_targets(top, data, loss, *run.train_data);
  if (o.max_duration().unit() == TimeUnit::kToken && run.train_data->tokens_per_example() == 0) {
    top.fail("max_duration", "'" + top.get<std::string>("max_duration", "") + "' counts tokens, but data.dataset " +
                                 data.get<std::string>("dataset", "fashion_mnist") +
                                 " is not token windows (text, tokens): use ep, ba or sp");
  }
  return {std::move(loss), device};
}

}  // namespace

std::optional<nlohmann::json> recipe_logger_options(const Recipe& recipe, const std::string& name) {
  OptionReader top = recipe_reader(recipe.root(), recipe.source(), recipe.set_keys());
  if (!top.has("loggers") || !top.json()["loggers"].is_object()) return std::nullopt;
  const OptionReader section = top.child("loggers");
  if (!section.has(name) && !section.json().contains(name)) return std::nullopt;
  if (section.json()[name] == false) return std::nullopt;
  OptionReader options = section.child(name);
  check_run_logger(name, options);
  return options.json();
}

ModelOptions recipe_model_spec(const Recipe& recipe) {
  OptionReader top = recipe_reader(recipe.root(), recipe.source(), recipe.set_keys());
  OptionReader data = top.child("data");
  TrainingRun run;
  std::vector<EvalSetSpec> eval_sets;
  QuickLook look;
  const RunStart start = read_up_to_the_data(top, data, eval_sets, look, run, nullptr);
  OptionReader model = top.child("model");
  read_model_spec(model, start.loss, run);
  return run.model_spec;
}

TrainingRun build_run(const Recipe& recipe, FusedData* fused) {
  OptionReader top = recipe_reader(recipe.root(), recipe.source(), recipe.set_keys());
  OptionReader data = top.child("data");
  TrainingRun run;
  TrainerOptions& o = run.options;
  std::vector<EvalSetSpec> eval_sets;
  QuickLook look;
  const RunStart start = read_up_to_the_data(top, data, eval_sets, look, run, fused);
  const Loss& loss = start.loss;
  const c10::Device& device = start.device;
  build_loaders(data, o.seed(), eval_sets, look, run);
  OptionReader model = top.child("model");
  build_model(model, loss, run);
  OptionReader optimizer = top.child("optimizer");
  build_optimizer(optimizer, o);
  o.hyperparameters(yaml_to_json(recipe.root()));
  build_plugins(top, run);
  for (const auto& algorithm : o.algorithms()) {  // what smooths class probabilities needs them
    if (std::dynamic_pointer_cast<LabelSmoothing>(algorithm) && loss.task() != TaskKind::kClasses) {
      top.fail("algorithms",
               "label_smoothing smooths class probabilities: it needs loss cross_entropy, not " + loss.name());
    }
  }
  read_memory_format(top, device, run);
  if (top.has("scheduler")) {
    OptionReader scheduler = top.child("scheduler");
    build_scheduler(scheduler, o);
  }
  try {  // the monitor names a set and a metric the run has
    check_save_top_k(o);
  } catch (const std::invalid_argument& e) {
    const std::string why = e.what();  // "<key> <what is wrong>"
    top.fail(why.substr(0, why.find(' ')), why.substr(why.find(' ') + 1));
  }
  apply_fast_dev_run(look, run);
  return run;
}

}  // namespace baton
