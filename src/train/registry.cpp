// The data set kinds by name: each registered once here (write its loader in
// src/train/data_sets.cpp, register it here with its keys, test it, add it to docs/data.md).
#include "baton/core/registry.h"

#include <algorithm>
#include <stdexcept>

#include "train/data_sets.h"

namespace baton {
namespace {

using DataSets = Registry<DataSetKind>;

// Each kind with the keys it reads (besides loader_keys()): a key of another kind is refused before
// any file is read.
const DataSets& data_set_registry() {
  static const DataSets data_sets(
      "dataset", DataSets::Order::kRegistration,
      {{"fashion_mnist",
        [] {
          return DataSetKind{{"dir"}, {"dir"}, load_fashion_mnist_data};
        }},
       {"files",
        [] {
          return DataSetKind{{"train_inputs", "train_labels", "eval_inputs", "eval_labels", "standardize"},
                             {"inputs", "labels"},
                             load_files};
        }},
       {"text",
        [] {
          return DataSetKind{{"path", "tokens", "context", "validation_fraction"}, {"path"}, load_text_data};
        }},
       {"images",
        [] {
          return DataSetKind{{"train_dir", "eval_dir", "train_list", "eval_list", "channels", "image_size",
                              "train_transforms", "eval_transforms", "normalize", "workers", "bad_files"},
                             {"dir", "list"},
                             load_images_data};
        }},
       {"webdataset",
        [] {
          return DataSetKind{
              {"train_shards", "eval_shards", "shuffle_buffer", "retry_seconds", "index_cache", "channels",
               "image_size", "train_transforms", "eval_transforms", "normalize", "workers", "bad_files"},
              {"shards"},
              load_webdataset_data};
        }},
       {"tokens", [] {
          return DataSetKind{{"train_files", "eval_files", "context", "vocab_size"}, {"files"}, load_tokens_data};
        }}});
  return data_sets;
}

}  // namespace

std::vector<std::string> data_set_names() { return data_set_registry().names(); }

std::vector<std::string> loader_keys() {
  return {"dataset", "batch_size", "eval_batch_size", "shuffle", "drop_last", "prefetch", "on_device"};
}

std::vector<std::string> data_keys() {
  std::vector<std::string> keys = loader_keys();
  for (const std::string& name : data_set_names()) {
    for (const std::string& key : data_set_registry().make(name).keys) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
  }
  return keys;
}

DataSplit load_data_sets(OptionReader& data, const DataSetContext& context) {
  const std::string name = data.get<std::string>("dataset", "fashion_mnist");
  if (!data_set_registry().contains(name)) data.fail("dataset", unknown_name("dataset", name, data_set_names()));
  const DataSetKind kind = data_set_registry().make(name);
  std::vector<std::string> keys = loader_keys();
  keys.insert(keys.end(), kind.keys.begin(), kind.keys.end());
  data.check_keys(keys);
  for (const EvalSetKeys& set : context.eval_sets) {  // where each named set's data are, in this kind's keys
    std::vector<std::string> set_keys = kind.eval_set_keys;
    set_keys.insert(set_keys.end(), kEvalSetKeys.begin(), kEvalSetKeys.end());
    set.keys->check_keys(set_keys);
  }
  return kind.load(data, context);
}

}  // namespace baton
