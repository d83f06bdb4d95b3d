// Reading a recipe: its sections' known keys, and where each value came from (an OptionOrigin), so
// that the one OptionReader's errors name the file, line, column and key. Private to src/train; no
// LibTorch here.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "baton/core/options.h"
#include "baton/train/recipe_file.h"
#include "core/yaml_json.h"
#include "train/data_sets.h"

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
                                                  "activation_checkpointing",
                                                  "memory_format",
                                                  "log_interval",
                                                  "deterministic",
                                                  "num_threads",
                                                  "distributed",
                                                  "ddp_bucket_mb",
                                                  "ddp_overlap",
                                                  "ddp_backend",
                                                  "sharding",
                                                  "shard_unit",
                                                  "offload",
                                                  "progress_bar",
                                                  "console_log_interval",
                                                  "eval_metrics",
                                                  "eval",
                                                  "fast_dev_run",
                                                  "overfit_batches",
                                                  "limit_train_batches",
                                                  "limit_eval_batches",
                                                  "loss",
                                                  "data",
                                                  "model",
                                                  "optimizer",
                                                  "scheduler",
                                                  "save_folder",
                                                  "save_interval",
                                                  "save_filename",
                                                  "save_num_checkpoints_to_keep",
                                                  "save_top_k",
                                                  "save_monitor",
                                                  "save_mode",
                                                  "save_weights_only",
                                                  "save_format",
                                                  "load_path",
                                                  "load_weights_only",
                                                  "load_strict",
                                                  "load_ignore_keys",
                                                  "algorithms",
                                                  "callbacks",
                                                  "loggers"};
// The data section's keys are the loaders' and every data set kind's: data_keys() (src/train/registry.cpp).
inline const std::vector<std::string> kModelKeys = {"name",  "hidden",   "path",      "layers",  "width",
                                                    "heads", "dropout",  "mlp_ratio", "weights", "outputs",
                                                    "arch",  "one_shot", "pretrained"};
inline const std::vector<std::string> kOptimizerKeys = {"name",         "lr",    "momentum", "dampening", "nesterov",
                                                        "weight_decay", "beta1", "beta2",    "eps",       "fused"};
inline const std::vector<std::string> kSchedulerKeys = {
    "name",           "alpha",         "alpha_i",      "alpha_f",    "gamma",
    "power",          "t_max",         "t_warmup",     "step_size",  "milestones",
    "decay_period",   "max_lr",        "pct_start",    "div_factor", "final_div_factor",
    "cycle_momentum", "base_momentum", "max_momentum", "t_decay",    "decay_shape"};

// Where a recipe's values were written: "FILE:LINE:COL" from the YAML document's marks, or
// "--set KEY" for a value a flag set. Its refusals are RecipeErrors.
class RecipeOrigin : public OptionOrigin {
 public:
  RecipeOrigin(const YAML::Node& root, std::string source, std::set<std::string> set_keys)
      : root_(root), source_(std::move(source)), set_keys_(std::move(set_keys)) {}  // a Node is a shared handle

  std::string where(const std::vector<std::string>& path, bool at_key) const override {
    std::string dotted;
    for (const auto& part : path) dotted += (dotted.empty() ? "" : ".") + part;
    if (set_keys_.count(dotted)) return "--set " + dotted;
    for (const auto& set : set_keys_) {  // a value inside a mapping a flag wrote (--set 'eval={...}')
      if (dotted.rfind(set + ".", 0) == 0) return "--set " + set;
    }
    if (at_key) {  // --set a.b.c=1 made a and a.b
      for (const auto& set : set_keys_) {
        if (set.rfind(dotted + ".", 0) == 0) return "--set " + set;
      }
    }
    // The value itself, its key, or (when it is absent) the mapping that would hold it; nothing
    // when that mapping is absent too.
    YAML::Node node = root_;
    YAML::Mark mark = node.Mark();
    for (std::size_t i = 0; i < path.size(); ++i) {
      const YAML::Node entry = find(node, path[i], at_key && i + 1 == path.size());
      if (!entry.IsDefined()) {
        if (i + 1 < path.size()) return source_;
        break;
      }
      mark = entry.Mark();
      node.reset(entry);
    }
    if (mark.is_null()) return source_;
    return source_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  }

  std::vector<std::string> order(const std::vector<std::string>& path) const override {
    YAML::Node node = root_;
    for (const auto& key : path) {
      const YAML::Node entry = find(node, key, false);
      if (!entry.IsDefined()) return {};
      node.reset(entry);
    }
    std::vector<std::string> out;
    if (!node.IsMap()) return out;
    for (auto it = node.begin(); it != node.end(); ++it) out.push_back(it->first.Scalar());
    return out;
  }

  [[noreturn]] void raise(const std::string& /*key*/, const std::string& message) const override {
    throw RecipeError(message);
  }

 private:
  // The value of `key` in the mapping `map` (or the key's own node), undefined when there is none.
  static YAML::Node find(const YAML::Node& map, const std::string& key, bool the_key) {
    if (!map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == key) return the_key ? it->first : it->second;
    }
    return YAML::Node(YAML::NodeType::Undefined);
  }

  YAML::Node root_;
  std::string source_;
  std::set<std::string> set_keys_;
};

// The reader of a recipe's values, from its top.
inline OptionReader recipe_reader(const YAML::Node& root, const std::string& source,
                                  const std::set<std::string>& set_keys) {
  return OptionReader(yaml_to_json(root), std::make_shared<RecipeOrigin>(root, source, set_keys));
}

}  // namespace baton::recipe_detail
