// The data set kinds of a recipe's `data.dataset`: each a loader that reads its keys from the data
// section and gives the training set and the evaluation set (null when there is none). Registered by
// name in src/train/registry.cpp; a loader reports a bad key or file with the reader's fail().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "baton/core/options.h"
#include "baton/data/dataset.h"

namespace baton {

// An evaluation set a recipe names under `eval:` (eval/NAME/METRIC): its keys are the kind's
// evaluation keys less their "eval_" prefix (DataSetKind::eval_set_keys) beside the recipe's own
// (metrics, interval, batch_size: kEvalSetKeys).
struct EvalSetKeys {
  std::string name;
  OptionReader* keys = nullptr;
};
inline const std::vector<std::string> kEvalSetKeys = {"metrics", "interval", "batch_size"};

struct DataSetContext {
  uint64_t seed = 0;  // the run's seed: splits and shuffles that the data set itself makes
  // The loss compares values (regression, binary_cross_entropy), not class indices: the files
  // kind reads its labels as float [N] or [N, K].
  bool float_targets = false;
  std::vector<EvalSetKeys> eval_sets;
};

struct DataSplit {
  std::shared_ptr<Dataset> train;
  std::shared_ptr<Dataset> eval;                                              // null: no evaluation set
  std::vector<std::pair<std::string, std::shared_ptr<Dataset>>> named_evals;  // DataSetContext::eval_sets
};

// Opens each of the recipe's named evaluation sets with `open(keys, "")`, the function that opens the
// data section's own evaluation set with `open(data, "eval_")`.
template <typename Open>
void open_eval_sets(const DataSetContext& context, DataSplit& split, Open&& open) {
  for (const EvalSetKeys& set : context.eval_sets) split.named_evals.emplace_back(set.name, open(*set.keys, ""));
}

// fashion_mnist: the IDX files in `dir`.
DataSplit load_fashion_mnist_data(OptionReader& data, const DataSetContext& context);
// files: arrays of inputs and labels (.npy, .csv, IDX), standardised unless `standardize: false`.
DataSplit load_files(OptionReader& data, const DataSetContext& context);
// text: next-token windows over a text file or folder.
DataSplit load_text_data(OptionReader& data, const DataSetContext& context);
// images: JPEG and PNG files in class folders or a CSV list (docs/data.md).
DataSplit load_images_data(OptionReader& data, const DataSetContext& context);
// webdataset: images in tar shards, local or over HTTP (docs/data.md).
DataSplit load_webdataset_data(OptionReader& data, const DataSetContext& context);
// tokens: windows over token shards in llm.c's format (docs/data.md).
DataSplit load_tokens_data(OptionReader& data, const DataSetContext& context);

// The data section's keys that every kind takes: the loaders'.
std::vector<std::string> loader_keys();

// A kind of data set: the keys of the data section it reads (besides loader_keys()), and its loader.
struct DataSetKind {
  std::vector<std::string> keys;
  std::vector<std::string> eval_set_keys;  // the keys of a named evaluation set (where its data are)
  DataSplit (*load)(OptionReader& data, const DataSetContext& context) = nullptr;
};

// The kind `data.dataset` names (default fashion_mnist), loaded; an unknown kind, or a key that is not
// the loader's or this kind's, fails at the key before anything is read.
DataSplit load_data_sets(OptionReader& data, const DataSetContext& context);
std::vector<std::string> data_set_names();
// Every key of the data section: the loader's and every kind's.
std::vector<std::string> data_keys();

}  // namespace baton
