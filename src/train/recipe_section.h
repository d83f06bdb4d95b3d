// Reading recipe sections: known keys, where each value came from, typed getters with errors that
// name the file, line, column and key. Private to src/train; no LibTorch here.
#pragma once

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "baton/core/options.h"
#include "baton/core/time.h"
#include "baton/train/recipe_file.h"

namespace baton::recipe_detail {

inline const std::vector<std::string> kTopKeys = {"run_name",
                                                  "seed",
                                                  "max_duration",
                                                  "eval_interval",
                                                  "eval_subset_num_batches",
                                                  "iteration_length",
                                                  "device",
                                                  "device_train_microbatch_size",
                                                  "precision",
                                                  "tf32",
                                                  "cuda_graphs",
                                                  "memory_format",
                                                  "log_interval",
                                                  "deterministic",
                                                  "num_threads",
                                                  "distributed",
                                                  "ddp_bucket_mb",
                                                  "ddp_overlap",
                                                  "ddp_backend",
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
                                                  "load_ignore_keys",
                                                  "algorithms",
                                                  "callbacks",
                                                  "loggers"};
inline const std::vector<std::string> kDataKeys = {
    "dataset",         "dir",     "train_inputs",       "train_labels", "eval_inputs", "eval_labels", "batch_size",
    "eval_batch_size", "shuffle", "drop_last",          "standardize",  "prefetch",    "on_device",   "path",
    "context",         "tokens",  "validation_fraction"};
inline const std::vector<std::string> kModelKeys = {"name", "hidden", "path", "layers", "width", "heads", "dropout"};
inline const std::vector<std::string> kOptimizerKeys = {"name",         "lr",    "momentum", "dampening", "nesterov",
                                                        "weight_decay", "beta1", "beta2",    "eps"};
inline const std::vector<std::string> kSchedulerKeys = {
    "name",      "alpha",      "alpha_i",          "alpha_f",        "gamma",         "power",
    "t_max",     "t_warmup",   "step_size",        "milestones",     "decay_period",  "max_lr",
    "pct_start", "div_factor", "final_div_factor", "cycle_momentum", "base_momentum", "max_momentum"};

// Reads one section of the recipe: knows its keys, where each value came from, and its types.
class Section {
 public:
  Section(const YAML::Node& node, std::string path, const std::string& source, const std::set<std::string>& set_keys)
      : node_(node), path_(std::move(path)), source_(source), set_keys_(set_keys) {}

  std::string where(const std::string& key, const YAML::Node& at) const {
    const std::string full = dotted(key);
    if (set_keys_.count(full)) return "--set " + full;
    if (!at.IsDefined()) return source_ + ": " + full;  // in a section the recipe does not have
    const YAML::Mark mark = at.Mark();
    if (mark.is_null()) return source_ + ": " + full;
    return source_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) + ": " + full;
  }

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    // A missing key has no position of its own: point at its section.
    const bool present = node_.IsDefined() && node_.IsMap() && node_[key].IsDefined();
    throw RecipeError(where(key, present ? node_[key] : node_) + ": " + why);
  }

  // As fail(), pointing at the key itself (for a name that is wrong, whatever its value).
  [[noreturn]] void fail_at_key(const std::string& key, const std::string& why) const {
    if (node_.IsMap()) {
      for (auto it = node_.begin(); it != node_.end(); ++it) {
        if (it->first.IsScalar() && it->first.Scalar() == key) throw RecipeError(where(key, it->first) + ": " + why);
      }
    }
    fail(key, why);
  }

  void check_keys(const std::vector<std::string>& known) const {
    if (!node_.IsDefined() || node_.IsNull()) return;
    if (!node_.IsMap()) throw RecipeError(where_self() + ": expected a mapping of keys to values");
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (!it->first.IsScalar()) {
        const YAML::Mark mark = it->first.Mark();
        throw RecipeError(source_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) +
                          ": a key must be a plain name, not a list or mapping");
      }
      const std::string key = it->first.Scalar();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        const YAML::Mark mark = it->first.Mark();
        const std::string set = set_key_under(dotted(key));
        const std::string loc =
            !set.empty() ? "--set " + set
                         : source_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
        throw RecipeError(loc + ": unknown key '" + dotted(key) + "' (known" + (path_.empty() ? "" : " in " + path_) +
                          ": " + join_names(known) + ")");
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
    T out{};
    try {
      out = value.as<T>();
    } catch (const YAML::Exception&) {
      fail(key, std::string("expected ") + type_name<T>() + ", got '" + text(value) + "'");
    }
    if constexpr (std::is_floating_point_v<T>) {  // no setting of a training run is NaN or infinite
      if (!std::isfinite(out)) fail(key, "expected a finite number, got '" + text(value) + "'");
    }
    return out;
  }

  // Reads `key` into `field`, which keeps its value (the options' own default) when the key is absent.
  template <typename T>
  void read(const std::string& key, T& field) const {
    field = get<T>(key, field);
  }
  void read(const std::string& key, Time& field) const { field = time(key, field); }

  // The value as a message shows it: one line, at most 80 characters.
  std::string text(const YAML::Node& value) const {
    std::string out;
    if (value.IsScalar()) {
      out = value.Scalar();
    } else {
      YAML::Emitter e;
      e << YAML::Flow << value;
      out = e.c_str();
    }
    for (char& c : out) {
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    }
    if (out.size() > 80) out = out.substr(0, 77) + "...";
    return out;
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
  const YAML::Node& node() const { return node_; }

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
  // The --set key that made `key` (itself, or one below it: --set a.b.c=1 makes a), or "".
  std::string set_key_under(const std::string& key) const {
    for (const auto& set : set_keys_) {
      if (set == key || set.rfind(key + ".", 0) == 0) return set;
    }
    return "";
  }
  std::string where_self() const {
    if (set_keys_.count(path_)) return "--set " + path_;
    if (!node_.IsDefined()) return source_ + ": " + path_;
    const YAML::Mark mark = node_.Mark();
    return source_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) + ": " + path_;
  }

  YAML::Node node_;
  std::string path_;
  const std::string& source_;
  const std::set<std::string>& set_keys_;
};

}  // namespace baton::recipe_detail
