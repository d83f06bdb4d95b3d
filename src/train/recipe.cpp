#include "baton/train/recipe.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include "baton/data/fashion_mnist.h"
#include "baton/data/readers.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/threads.h"

namespace baton {
namespace {

const std::vector<std::string> kTopKeys = {"run_name",
                                           "seed",
                                           "max_duration",
                                           "eval_interval",
                                           "eval_subset_num_batches",
                                           "device_train_microbatch_size",
                                           "precision",
                                           "deterministic",
                                           "num_threads",
                                           "progress_bar",
                                           "console_log_interval",
                                           "eval_metrics",
                                           "data",
                                           "model",
                                           "optimizer",
                                           "scheduler",
                                           "save_folder",
                                           "save_interval",
                                           "save_filename",
                                           "save_num_checkpoints_to_keep",
                                           "save_weights_only",
                                           "load_path",
                                           "load_weights_only",
                                           "load_strict",
                                           "load_ignore_keys"};
const std::vector<std::string> kDataKeys = {"dataset",     "dir",         "train_inputs", "train_labels",
                                            "eval_inputs", "eval_labels", "batch_size",   "eval_batch_size",
                                            "shuffle",     "drop_last",   "standardize",  "prefetch"};
const std::vector<std::string> kModelKeys = {"name", "hidden", "path"};
const std::vector<std::string> kOptimizerKeys = {"name",         "lr",    "momentum", "dampening", "nesterov",
                                                 "weight_decay", "beta1", "beta2",    "eps"};
const std::vector<std::string> kSchedulerKeys = {
    "name",      "alpha",      "alpha_i",          "alpha_f",        "gamma",         "power",
    "t_max",     "t_warmup",   "step_size",        "milestones",     "decay_period",  "max_lr",
    "pct_start", "div_factor", "final_div_factor", "cycle_momentum", "base_momentum", "max_momentum"};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Reads one section of the recipe: knows its keys, where each value came from, and its types.
class Section {
 public:
  Section(const YAML::Node& node, std::string path, const std::string& source, const std::set<std::string>& set_keys)
      : node_(node), path_(std::move(path)), source_(source), set_keys_(set_keys) {}

  std::string where(const std::string& key, const YAML::Node& at) const {
    const std::string full = dotted(key);
    if (set_keys_.count(full)) return "--set " + full;
    const YAML::Mark mark = at.Mark();
    if (mark.is_null()) return source_ + ": " + full;
    return source_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) + ": " + full;
  }

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    // A missing key has no position of its own: point at its section.
    const bool present = node_.IsDefined() && node_.IsMap() && node_[key].IsDefined();
    throw RecipeError(where(key, present ? node_[key] : node_) + ": " + why);
  }

  void check_keys(const std::vector<std::string>& known) const {
    if (!node_.IsDefined() || node_.IsNull()) return;
    if (!node_.IsMap()) throw RecipeError(where_self() + ": expected a mapping of keys to values");
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        const YAML::Mark mark = it->first.Mark();
        const std::string loc = set_keys_.count(dotted(key)) ? "--set " + dotted(key)
                                                             : source_ + ":" + std::to_string(mark.line + 1) + ":" +
                                                                   std::to_string(mark.column + 1);
        throw RecipeError(loc + ": unknown key '" + dotted(key) + "' (known" + (path_.empty() ? "" : " in " + path_) +
                          ": " + join(known) + ")");
      }
    }
  }

  bool has(const std::string& key) const {
    return node_.IsDefined() && node_.IsMap() && node_[key].IsDefined() && !node_[key].IsNull();
  }

  template <typename T>
  T get(const std::string& key, T fallback) const {
    if (!has(key)) return fallback;
    const YAML::Node value = node_[key];
    try {
      return value.as<T>();
    } catch (const YAML::Exception&) {
      fail(key, std::string("expected ") + type_name<T>() + ", got '" + text(value) + "'");
    }
  }

  std::string text(const YAML::Node& value) const {
    if (value.IsScalar()) return value.Scalar();
    YAML::Emitter e;
    e << YAML::Flow << value;
    return e.c_str();
  }

  Time time(const std::string& key, Time fallback, bool zero_means_none = false) const {
    if (!has(key)) return fallback;
    const std::string s = get<std::string>(key, "");
    if (zero_means_none && (s == "0" || s == "0.0")) return Time::from_epoch(0);
    try {
      return Time::parse(s);
    } catch (const std::invalid_argument& e) {
      fail(key, e.what());
    }
  }

  std::vector<Time> times(const std::string& key) const {
    std::vector<Time> out;
    if (!has(key)) return out;
    if (!node_[key].IsSequence()) fail(key, "expected a list of times such as [30ep, 60ep]");
    for (const auto& item : node_[key]) {
      try {
        out.push_back(Time::parse(item.as<std::string>()));
      } catch (const std::exception& e) {
        fail(key, e.what());
      }
    }
    return out;
  }

  Section child(const std::string& key) const { return Section(node_[key], dotted(key), source_, set_keys_); }

 private:
  template <typename T>
  static const char* type_name() {
    if constexpr (std::is_same_v<T, bool>)
      return "true or false";
    else if constexpr (std::is_integral_v<T>)
      return "a whole number";
    else if constexpr (std::is_floating_point_v<T>)
      return "a number";
    else if constexpr (std::is_same_v<T, std::string>)
      return "a string";
    else
      return "a list";
  }
  std::string dotted(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  std::string where_self() const {
    if (set_keys_.count(path_)) return "--set " + path_;
    const YAML::Mark mark = node_.Mark();
    return source_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) + ": " + path_;
  }

  YAML::Node node_;
  std::string path_;
  const std::string& source_;
  const std::set<std::string>& set_keys_;
};

}  // namespace

Recipe::Recipe() : root_(std::make_unique<YAML::Node>()) {}
Recipe::Recipe(const Recipe& other)
    : source_(other.source_), root_(std::make_unique<YAML::Node>(YAML::Clone(*other.root_))) {}
Recipe& Recipe::operator=(const Recipe& other) {
  source_ = other.source_;
  root_ = std::make_unique<YAML::Node>(YAML::Clone(*other.root_));
  return *this;
}
Recipe::~Recipe() = default;

const YAML::Node& Recipe::root() const { return *root_; }

Recipe Recipe::load(const std::string& path, const std::vector<std::string>& sets) {
  std::ifstream in(path);
  if (!in) throw RecipeError(path + ": cannot open the recipe (" + std::strerror(errno) + ")");
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path, sets);
}

Recipe Recipe::parse(const std::string& yaml, const std::string& source, const std::vector<std::string>& sets) {
  Recipe recipe;
  recipe.source_ = source;
  try {
    *recipe.root_ = YAML::Load(yaml);
  } catch (const YAML::ParserException& e) {
    throw RecipeError(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": not valid YAML: " + e.msg);
  }
  YAML::Node& root = *recipe.root_;
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw RecipeError(source + ": a recipe is a mapping of keys to values");
  for (const std::string& set : sets) {
    const auto eq = set.find('=');
    if (eq == std::string::npos || eq == 0)
      throw RecipeError("--set " + set + ": expected key=value, e.g. optimizer.lr=0.1");
    const std::string key = set.substr(0, eq);
    YAML::Node value;
    try {
      value = YAML::Load(set.substr(eq + 1));
    } catch (const YAML::ParserException& e) {
      throw RecipeError("--set " + key + ": not a valid value: " + e.msg);
    }
    // Walk to the parent mapping, creating sections that are missing.
    std::vector<std::string> parts;
    std::stringstream ss(key);
    for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
    YAML::Node node = root;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node next = node[parts[i]];
      if (!next.IsDefined() || next.IsNull()) next = YAML::Node(YAML::NodeType::Map);
      if (!next.IsMap()) throw RecipeError("--set " + key + ": '" + parts[i] + "' is not a section");
      node[parts[i]] = next;
      node.reset(next);
    }
    node[parts.back()] = value;
    recipe.set_keys_.insert(key);
  }
  // Check every key now, so that a typo fails before any data is read.
  Section top(root, "", recipe.source_, recipe.set_keys_);
  top.check_keys(kTopKeys);
  top.child("data").check_keys(kDataKeys);
  top.child("model").check_keys(kModelKeys);
  top.child("optimizer").check_keys(kOptimizerKeys);
  top.child("scheduler").check_keys(kSchedulerKeys);
  return recipe;
}

std::string Recipe::resolved_yaml() const {
  YAML::Emitter out;
  out << *root_;
  return std::string(out.c_str()) + "\n";
}

TrainingRun build_run(const Recipe& recipe) {
  const Section top(recipe.root(), "", recipe.source(), recipe.set_keys());
  TrainingRun run;
  TrainerOptions& o = run.options;
  const uint64_t seed = top.get<uint64_t>("seed", 0);
  o.seed(seed);
  // LibTorch seeds its generator at random in each process: seed before the model is built, so
  // that the same recipe starts from the same weights.
  torch::manual_seed(seed);
  o.run_name(top.get<std::string>("run_name", ""));
  o.max_duration(top.time("max_duration", Time::from_epoch(1)));
  o.eval_interval(top.time("eval_interval", Time::from_epoch(1), /*zero_means_none=*/true));
  o.eval_subset_num_batches(top.get<int64_t>("eval_subset_num_batches", -1));
  o.deterministic(top.get<bool>("deterministic", false));
  o.num_threads(top.get<int>("num_threads", 0));
  o.progress_bar(top.get<bool>("progress_bar", true));
  o.console_log_interval(top.time("console_log_interval", Time::from_epoch(1)));
  if (top.has("eval_metrics")) o.eval_metrics(top.get<std::vector<std::string>>("eval_metrics", {}));
  const std::string precision = top.get<std::string>("precision", "auto");
  if (precision == "auto") {
    o.precision(cpu_has_native_bf16() ? Precision::kAmpBf16 : Precision::kFp32);
  } else {
    try {
      o.precision(parse_precision(precision));
    } catch (const std::invalid_argument& e) {
      top.fail("precision", std::string(e.what()) + " or 'auto'");
    }
  }
  o.save_folder(top.get<std::string>("save_folder", ""));
  o.save_interval(top.time("save_interval", Time::from_epoch(1)));
  o.save_filename(top.get<std::string>("save_filename", "ep{epoch}-ba{batch}.ckpt"));
  o.save_num_checkpoints_to_keep(top.get<int>("save_num_checkpoints_to_keep", -1));
  o.save_weights_only(top.get<bool>("save_weights_only", false));
  o.load_path(top.get<std::string>("load_path", ""));
  o.load_weights_only(top.get<bool>("load_weights_only", false));
  o.load_strict(top.get<bool>("load_strict", true));
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

  // Data.
  const Section data = top.child("data");
  const std::string dataset = data.get<std::string>("dataset", "fashion_mnist");
  if (dataset == "fashion_mnist") {
    auto [train, test] = load_fashion_mnist(data.get<std::string>("dir", kFashionMnistDir));
    run.train_data = train;
    run.eval_data = test;
  } else if (dataset == "files") {
    for (const char* key : {"train_inputs", "train_labels"}) {
      if (!data.has(key)) data.fail(key, "required when data.dataset is files");
    }
    if (data.has("eval_inputs") != data.has("eval_labels")) {
      data.fail(data.has("eval_inputs") ? "eval_labels" : "eval_inputs", "eval_inputs and eval_labels go together");
    }
    auto read = [&](const std::string& key) { return read_array(data.get<std::string>(key, "")); };
    at::Tensor train_x = as_float_inputs(read("train_inputs"));
    at::Tensor train_y = read("train_labels").to(torch::kLong);
    at::Tensor eval_x;
    at::Tensor eval_y;
    if (data.has("eval_inputs")) {
      eval_x = as_float_inputs(read("eval_inputs"));
      eval_y = read("eval_labels").to(torch::kLong);
      if (eval_x.sizes().slice(1) != train_x.sizes().slice(1)) {
        data.fail("eval_inputs", "examples of shape " + c10::str(eval_x.sizes().slice(1)) +
                                     " but the training examples are " + c10::str(train_x.sizes().slice(1)));
      }
    }
    if (data.get<bool>("standardize", true)) {
      const at::Tensor mean = train_x.mean();
      const at::Tensor std = train_x.std().clamp_min(1e-12);
      train_x = (train_x - mean) / std;
      if (eval_x.defined()) eval_x = (eval_x - mean) / std;
    }
    try {
      run.train_data = std::make_shared<TensorDataset>(train_x, train_y);
      if (eval_x.defined()) run.eval_data = std::make_shared<TensorDataset>(eval_x, eval_y);
    } catch (const std::invalid_argument& e) {
      data.fail("train_labels", e.what());
    }
  } else {
    data.fail("dataset", "unknown dataset '" + dataset + "' (known: fashion_mnist, files)");
  }
  const int64_t batch_size = data.get<int64_t>("batch_size", 128);
  if (batch_size < 1) data.fail("batch_size", "must be at least 1");
  o.train_dataloader(std::make_shared<DataLoader>(run.train_data, DataLoaderOptions()
                                                                      .batch_size(batch_size)
                                                                      .shuffle(data.get<bool>("shuffle", true))
                                                                      .drop_last(data.get<bool>("drop_last", false))
                                                                      .prefetch(data.get<bool>("prefetch", true))
                                                                      .seed(seed)));
  if (run.eval_data) {
    const int64_t eval_batch = data.get<int64_t>("eval_batch_size", 1000);
    if (eval_batch < 1) data.fail("eval_batch_size", "must be at least 1");
    o.eval_dataloader(
        "eval", std::make_shared<DataLoader>(run.eval_data, DataLoaderOptions().batch_size(eval_batch).shuffle(false)));
  }

  // Model.
  const Section model = top.child("model");
  run.model_name = model.get<std::string>("name", "fashion_cnn");
  ModelSpec spec{.input_shape = run.train_data->input_shape(), .num_classes = run.train_data->num_classes()};
  if (model.has("hidden")) spec.hidden = model.get<std::vector<int64_t>>("hidden", {});
  if (run.model_name == "torchscript") {
    if (!model.has("path")) model.fail("path", "required for a torchscript model (a file saved with torch.jit.save)");
    o.model(load_torchscript_classifier(model.get<std::string>("path", "")));
  } else {
    try {
      o.model(make_model(run.model_name, spec));
    } catch (const std::invalid_argument& e) {
      model.fail("name", std::string(e.what()) + ", or torchscript with model.path");
    }
  }

  // Optimizer.
  const Section opt = top.child("optimizer");
  OptimizerSpec os;
  os.name = opt.get<std::string>("name", "sgd");
  os.lr = opt.get<double>("lr", os.lr);
  os.momentum = opt.get<double>("momentum", os.momentum);
  os.dampening = opt.get<double>("dampening", os.dampening);
  os.nesterov = opt.get<bool>("nesterov", os.nesterov);
  os.weight_decay = opt.get<double>("weight_decay", os.weight_decay);
  os.beta1 = opt.get<double>("beta1", os.beta1);
  os.beta2 = opt.get<double>("beta2", os.beta2);
  os.eps = opt.get<double>("eps", os.eps);
  try {
    o.optimizers({make_optimizer(os, o.model()->parameters())});
  } catch (const std::invalid_argument& e) {
    opt.fail("name", e.what());
  }

  // Scheduler.
  if (top.has("scheduler")) {
    const Section sch = top.child("scheduler");
    SchedulerSpec ss;
    ss.name = sch.get<std::string>("name", "constant");
    ss.alpha = sch.get<double>("alpha", ss.alpha);
    ss.alpha_i = sch.get<double>("alpha_i", ss.alpha_i);
    ss.alpha_f = sch.get<double>("alpha_f", ss.alpha_f);
    ss.gamma = sch.get<double>("gamma", ss.gamma);
    ss.power = sch.get<double>("power", ss.power);
    ss.t_max = sch.time("t_max", ss.t_max);
    ss.t_warmup = sch.time("t_warmup", ss.t_warmup);
    ss.step_size = sch.time("step_size", ss.step_size);
    ss.milestones = sch.times("milestones");
    ss.decay_period = sch.time("decay_period", ss.decay_period);
    if (sch.has("max_lr")) ss.max_lr = sch.get<double>("max_lr", 0.0);
    ss.pct_start = sch.get<double>("pct_start", ss.pct_start);
    ss.div_factor = sch.get<double>("div_factor", ss.div_factor);
    ss.final_div_factor = sch.get<double>("final_div_factor", ss.final_div_factor);
    ss.cycle_momentum = sch.get<bool>("cycle_momentum", ss.cycle_momentum);
    ss.base_momentum = sch.get<double>("base_momentum", ss.base_momentum);
    ss.max_momentum = sch.get<double>("max_momentum", ss.max_momentum);
    try {
      o.schedulers({make_scheduler(ss)});
    } catch (const std::invalid_argument& e) {
      sch.fail("name", e.what());
    }
  }
  return run;
}

}  // namespace baton
