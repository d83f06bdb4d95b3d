// The data sets a recipe's data section names (data.dataset), read by their loaders.
#include "train/data_sets.h"

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <tuple>

#include <torch/torch.h>

#include "baton/core/registry.h"
#include "baton/data/fashion_mnist.h"
#include "baton/data/image_folder.h"
#include "baton/data/readers.h"
#include "baton/data/text.h"
#include "baton/data/text_tokenizer.h"
#include "baton/data/tokenizer.h"
#include "baton/data/tokens.h"
#include "baton/data/webdataset.h"

namespace baton {

// data.dataset: fashion_mnist — the IDX files of Fashion-MNIST in `dir`.
// A named evaluation set: {dir: D}, the test files of D, standardised as the training set.
DataSplit load_fashion_mnist_data(OptionReader& data, const DataSetContext& context) {
  DataSplit split;
  try {
    std::tie(split.train, split.eval) = load_fashion_mnist(data.get<std::string>("dir", kFashionMnistDir));
  } catch (const std::runtime_error& e) {
    data.fail("dir", e.what());
  }
  const Standardization standardization = *std::static_pointer_cast<TensorDataset>(split.train)->standardization();
  open_eval_sets(context, split, [&](OptionReader& set, const std::string&) -> std::shared_ptr<Dataset> {
    if (!set.has("dir")) set.fail_self("expected dir: a folder of Fashion-MNIST's IDX files (its t10k files)");
    try {
      return load_fashion_mnist_test(set.get<std::string>("dir", ""), standardization);
    } catch (const std::runtime_error& e) {
      set.fail("dir", e.what());
    }
  });
  return split;
}

// data.dataset: files — arrays of inputs and labels (.npy, .csv, ...), standardised unless told not.
DataSplit load_files(OptionReader& data, const DataSetContext& context) {
  for (const char* key : {"train_inputs", "train_labels"}) {
    if (!data.has(key)) data.fail(key, "required when data.dataset is files");
  }
  if (data.has("eval_inputs") != data.has("eval_labels")) {
    data.fail(data.has("eval_inputs") ? "eval_labels" : "eval_inputs", "eval_inputs and eval_labels go together");
  }
  auto read = [](OptionReader& r, const std::string& key) {
    try {
      return read_array(r.get<std::string>(key, ""));
    } catch (const std::runtime_error& e) {  // missing, not a regular file, corrupt: the key and the file
      r.fail(key, e.what());
    }
  };
  // Values, as the loss needs them: [N] or [N, K] floats, every one finite.
  auto values = [&](OptionReader& r, const std::string& key) {
    at::Tensor y = read(r, key);
    if (y.dim() < 1 || y.dim() > 2) {
      r.fail(key, "labels of shape " + c10::str(y.sizes()) + ": the loss wants values [N] or [N, K]");
    }
    y = y.to(torch::kFloat);
    const at::Tensor bad = y.isfinite().logical_not();
    if (bad.any().item<bool>()) {
      const int64_t row = bad.reshape({y.size(0), -1}).any(1).nonzero()[0][0].item<int64_t>();
      r.fail(key, "row " + std::to_string(row) + " holds a value that is not finite (NaN or infinite)");
    }
    return y;
  };
  // Class indices, one per example: [N] (or [N, 1]), from 0 to a class count a model can have.
  auto labels = [&](OptionReader& r, const std::string& key) {
    if (context.float_targets) return values(r, key);
    at::Tensor y = read(r, key);
    if (y.dim() == 2 && y.size(1) == 1) y = y.flatten();
    if (y.dim() != 1) {
      r.fail(key, "labels of shape " + c10::str(y.sizes()) + ": expected one class index per example ([N])");
    }
    y = y.to(torch::kLong);
    if (y.numel() > 0 && (y.min().item<int64_t>() < 0 || y.max().item<int64_t>() >= kMaxClasses)) {
      const int64_t bad = y.min().item<int64_t>() < 0 ? y.min().item<int64_t>() : y.max().item<int64_t>();
      r.fail(key, "label " + std::to_string(bad) + ": class indices run from 0 to the number of classes - 1 (" +
                      "at most " + std::to_string(kMaxClasses) + ")");
    }
    return y;
  };
  auto inputs = [&](OptionReader& r, const std::string& key) {
    at::Tensor x = as_float_inputs(read(r, key));
    if (x.size(0) == 0) r.fail(key, "holds 0 examples");
    return x;
  };
  auto tensors = [](OptionReader& r, const std::string& labels_key, const at::Tensor& x, const at::Tensor& y) {
    try {
      return std::make_shared<TensorDataset>(x, y);
    } catch (const std::invalid_argument& e) {  // not as many labels as inputs
      r.fail(labels_key, e.what());
    }
  };
  at::Tensor train_x = inputs(data, "train_inputs");
  const at::Tensor train_y = labels(data, "train_labels");
  std::optional<Standardization> standardization;
  if (data.get<bool>("standardize", true)) {
    standardization = Standardization{train_x.mean().item<double>(), train_x.std().clamp_min(1e-12).item<double>()};
  }
  // An evaluation set: `prefix`inputs and `prefix`labels, shaped as the training examples and labels,
  // standardised as they are.
  auto eval_set = [&](OptionReader& r, const std::string& prefix) -> std::shared_ptr<Dataset> {
    const std::string inputs_key = prefix + "inputs";
    const std::string labels_key = prefix + "labels";
    if (!r.has(inputs_key) || !r.has(labels_key)) {
      r.fail(r.has(inputs_key) ? labels_key : inputs_key, inputs_key + " and " + labels_key + " go together");
    }
    at::Tensor x = inputs(r, inputs_key);
    const at::Tensor y = labels(r, labels_key);
    if (context.float_targets && y.sizes().slice(1) != train_y.sizes().slice(1)) {
      r.fail(labels_key, "values of shape " + c10::str(y.sizes().slice(1)) +
                             " an example, but the training labels have " + c10::str(train_y.sizes().slice(1)));
    }
    if (x.sizes().slice(1) != train_x.sizes().slice(1)) {
      r.fail(inputs_key, "examples of shape " + c10::str(x.sizes().slice(1)) + " but the training examples are " +
                             c10::str(train_x.sizes().slice(1)));
    }
    if (standardization) x = (x - standardization->mean) / standardization->std;
    return tensors(r, labels_key, x, y);
  };
  DataSplit split;
  if (data.has("eval_inputs")) split.eval = eval_set(data, "eval_");
  open_eval_sets(context, split, eval_set);
  if (standardization) train_x = (train_x - standardization->mean) / standardization->std;
  auto train = tensors(data, "train_labels", train_x, train_y);
  if (standardization) train->set_standardization(*standardization);
  split.train = train;
  return split;
}

// data.dataset: text — next-token windows over a text file or folder.
DataSplit load_text_data(OptionReader& data, const DataSetContext& context) {
  TextOptions t;
  data.read("context", t.context());
  data.read("tokens", t.tokens());
  data.read("validation_fraction", t.validation_fraction());
  t.seed(context.seed);
  const std::string path = data.get<std::string>("path", kDefaultTextPath);
  DataSplit split;
  try {
    std::tie(split.train, split.eval) = load_text(path, t);
  } catch (const OptionError& e) {
    data.fail(e.key(), e.what());
  } catch (const std::exception& e) {
    data.fail("path", e.what());
  }
  // A named evaluation set: {path: P}, all of P's text in the training text's tokens.
  open_eval_sets(context, split, [&](OptionReader& set, const std::string&) -> std::shared_ptr<Dataset> {
    if (!set.has("path")) set.fail_self("expected path: a text file or folder");
    try {
      return load_text_eval(set.get<std::string>("path", ""), path, t);
    } catch (const std::exception& e) {
      set.fail("path", e.what());
    }
  });
  return split;
}

namespace {

// The keys of image data (images, webdataset) besides where the files are: the options of both
// pipelines, each checked before any file is read (a bad transform names its key).
struct ImageKeys {
  ImageFolderOptions base;  // eval_transforms set: what baton predict uses too
  nlohmann::json train_steps;
};

ImageKeys read_image_keys(OptionReader& data, const DataSetContext& context) {
  ImageKeys keys;
  ImageFolderOptions& base = keys.base;
  base.seed(context.seed);
  data.read("channels", base.channels(), 1, 3);
  if (base.channels() == 2) data.fail("channels", "expected 1 (gray) or 3 (RGB), got '2'");
  if (data.has("image_size")) base.image_size(data.get<int64_t>("image_size", 0));
  if (base.image_size() < 1 || base.image_size() > kMaxImageSide) {
    data.fail("image_size", "expected a size in pixels from 1 to " + std::to_string(kMaxImageSide) +
                                " (an RGB image of that side is " +
                                std::to_string(kMaxImageSide * kMaxImageSide * 12 >> 20) + " MiB as floats)");
  }
  if (data.has("normalize")) {
    OptionReader normalize = data.child("normalize");
    normalize.read("mean", base.mean());
    normalize.read("std", base.std());
    normalize.finish();
  }
  if (data.has("workers") && data.json()["workers"] != "auto") {
    int workers = 0;
    data.read("workers", workers, 1, 256);
    base.workers(workers);
  } else {
    data.get<std::string>("workers", "auto");  // accounted for
  }
  data.read("bad_files", base.bad_files());
  const int64_t side = base.image_size();
  const nlohmann::json train_default =
      // fastai's crops (down to 35 %, not torchvision's 8 % for 90 ImageNet epochs): they learn on
      // small images and short runs too.
      nlohmann::json::array({{{"random_resized_crop", {{"scale", {0.35, 1.0}}}}}, "horizontal_flip"});
  const nlohmann::json eval_default = nlohmann::json::array(
      {{{"resize", static_cast<int64_t>(std::lround(static_cast<double>(side) / 0.875))}}, {{"center_crop", side}}});
  auto pipeline = [&](const std::string& key, const nlohmann::json& fallback) {
    nlohmann::json steps = data.has(key) ? data.json()[key] : fallback;
    try {
      ImageTransforms::parse(steps, side, key);
    } catch (const std::invalid_argument& e) {
      std::string why = std::string(e.what()).substr(key.size());  // "[1].resize: ..." or ": ..."
      if (why.rfind(": ", 0) == 0) why = why.substr(2);
      data.fail(key, why);
    }
    return steps;
  };
  base.eval_transforms(pipeline("eval_transforms", eval_default));
  keys.train_steps = pipeline("train_transforms", train_default);
  return keys;
}

}  // namespace

// data.dataset: images — folders in ImageNet's layout (train_dir, eval_dir) or CSV lists (train_list,
// eval_list) of JPEG and PNG files, decoded and transformed on `workers` threads.
DataSplit load_images_data(OptionReader& data, const DataSetContext& context) {
  if (data.has("train_dir") == data.has("train_list")) {
    data.fail(data.has("train_dir") ? "train_list" : "train_dir",
              "give one of train_dir (class folders) or train_list (a CSV of path,label)");
  }
  if (data.has("eval_dir") && data.has("eval_list")) data.fail("eval_list", "give eval_dir or eval_list, not both");
  const ImageKeys keys = read_image_keys(data, context);
  auto build = [&](OptionReader& r, const std::string& dir_key, const std::string& list_key,
                   const nlohmann::json& steps, const std::string& where,
                   std::vector<std::string> classes) -> std::shared_ptr<ImageFolder> {
    ImageFolderOptions o = keys.base;
    o.transforms(steps).where(where);
    const std::string key = r.has(dir_key) ? dir_key : list_key;
    try {
      const std::string path = r.get<std::string>(key, "");
      return key == dir_key ? ImageFolder::from_dir(path, o, std::move(classes))
                            : ImageFolder::from_list(path, o, std::move(classes));
    } catch (const std::exception& e) {
      r.fail(key, e.what());
    }
  };
  DataSplit split;
  auto train = build(data, "train_dir", "train_list", keys.train_steps, "train_transforms", {});
  split.train = train;
  // An evaluation set: `prefix`dir or `prefix`list, in the training set's classes.
  auto eval_set = [&](OptionReader& r, const std::string& prefix) -> std::shared_ptr<Dataset> {
    if (r.has(prefix + "dir") == r.has(prefix + "list")) {
      r.fail_self("give one of " + prefix + "dir (class folders) or " + prefix + "list (a CSV of path,label)",
                  prefix + "list");
    }
    return build(r, prefix + "dir", prefix + "list", keys.base.eval_transforms(), "eval_transforms", train->classes());
  };
  if (data.has("eval_dir") || data.has("eval_list")) split.eval = eval_set(data, "eval_");
  open_eval_sets(context, split, eval_set);
  return split;
}

// data.dataset: webdataset — tar shards of KEY.jpg|png + KEY.cls samples (train_shards, eval_shards:
// a pattern with brace ranges or a list of them; paths or http(s):// URLs), the same image keys.
DataSplit load_webdataset_data(OptionReader& data, const DataSetContext& context) {
  if (!data.has("train_shards")) {
    data.fail("train_shards", "required when data.dataset is webdataset (\"shards/train-{000000..000099}.tar\")");
  }
  const ImageKeys keys = read_image_keys(data, context);
  WebDatasetOptions o;
  data.read("shuffle_buffer", o.shuffle_buffer());
  if (o.shuffle_buffer() < 1 || o.shuffle_buffer() > 10'000'000)
    data.fail("shuffle_buffer", "expected 1 to 10000000 samples");
  data.read("retry_seconds", o.retry_seconds());
  if (data.has("index_cache")) {  // a folder, or false: URL shards indexed afresh each run
    const nlohmann::json& v = data.json()["index_cache"];
    if (v.is_boolean()) {
      o.cache_index(data.get<bool>("index_cache", true));
    } else {
      o.index_cache(data.get<std::string>("index_cache", ""));
      if (o.index_cache().empty()) data.fail("index_cache", "expected a folder, or false");
    }
  }
  if (!(o.retry_seconds() >= 0 && o.retry_seconds() <= 86400))
    data.fail("retry_seconds", "expected 0 to 86400 seconds");
  auto shards = [&](OptionReader& r, const std::string& key) {
    const nlohmann::json& value = r.json()[key];
    std::vector<std::string> names;
    for (const auto& p : value.is_array() ? value : nlohmann::json::array({value})) {
      if (!p.is_string()) r.fail(key, "expected a shard pattern (train-{000000..000099}.tar) or a list of them");
      try {
        for (std::string& name : expand_braces(p.get<std::string>())) names.push_back(std::move(name));
      } catch (const std::invalid_argument& e) {
        r.fail(key, e.what());
      }
    }
    if (names.empty()) r.fail(key, "expected a shard pattern (train-{000000..000099}.tar) or a list of them");
    return names;
  };
  auto open = [&](OptionReader& r, const std::string& key, const nlohmann::json& steps, const std::string& where,
                  int64_t classes) {
    const std::vector<std::string> names = shards(r, key);
    WebDatasetOptions options = o;
    options.images() = keys.base;
    options.images().transforms(steps).where(where);
    try {
      return WebDataset::open(names, options, classes);
    } catch (const std::exception& e) {
      r.fail(key, e.what());
    }
  };
  DataSplit split;
  auto train = open(data, "train_shards", keys.train_steps, "train_transforms", 0);
  split.train = train;
  auto eval_set = [&](OptionReader& r, const std::string& prefix) -> std::shared_ptr<Dataset> {
    if (!r.has(prefix + "shards")) r.fail_self("expected " + prefix + "shards: a shard pattern or a list of them");
    return open(r, prefix + "shards", keys.base.eval_transforms(), "eval_transforms", train->num_classes());
  };
  if (data.has("eval_shards")) split.eval = eval_set(data, "eval_");
  open_eval_sets(context, split, eval_set);
  return split;
}

// data.dataset: tokens — windows of `context` tokens over token shards in llm.c's format
// (train_files, eval_files: globs), their vocabulary from vocab_size, the tokenizer beside the
// training shards (tokenizer.model or tokenizer.json), or the largest token.
DataSplit load_tokens_data(OptionReader& data, const DataSetContext& context) {
  if (!data.has("train_files"))
    data.fail("train_files", "required when data.dataset is tokens (a glob of .bin shards)");
  auto files = [&](OptionReader& r, const std::string& key) {
    const nlohmann::json& value = r.json()[key];
    std::vector<std::string> patterns;
    if (value.is_string()) patterns.push_back(value.get<std::string>());
    if (value.is_array()) {
      for (const auto& p : value) {
        if (!p.is_string()) r.fail(key, "expected a glob or a list of globs of token shards");
        patterns.push_back(p.get<std::string>());
      }
    }
    if (patterns.empty()) r.fail(key, "expected a glob or a list of globs of token shards");
    try {
      return expand_globs(patterns, key);
    } catch (const std::exception& e) {
      r.fail(key, e.what());
    }
  };
  const std::vector<std::string> train_files = files(data, "train_files");
  TokenOptions o;
  o.seed(context.seed);
  data.read("context", o.context());
  if (o.context() < 1 || o.context() > (int64_t{1} << 24)) data.fail("context", "expected 1 to 16777216 tokens");
  data.read("vocab_size", o.vocab_size());
  if (data.has("vocab_size") && (o.vocab_size() < 1 || o.vocab_size() > INT32_MAX)) {
    data.fail("vocab_size", "expected 1 to 2147483647");
  }
  if (!data.has("vocab_size")) {  // the tokenizer baton tokenize put beside the shards
    const std::filesystem::path folder = std::filesystem::path(train_files.front()).parent_path();
    std::error_code ec;
    if (std::filesystem::exists(folder / kTokenizerFile, ec) ||
        std::filesystem::exists(folder / "tokenizer.json", ec)) {
      try {
        o.vocab_size(TextTokenizer::load(folder.string()).vocab_size());
      } catch (const std::exception& e) {
        data.fail("train_files", e.what());
      }
    }
  }
  auto open = [&](OptionReader& r, const std::string& key, const std::vector<std::string>& shards, bool random) {
    try {
      return TokenDataset::open(shards, TokenOptions(o).random_offsets(random));
    } catch (const OptionError& e) {
      data.fail(e.key(), e.what());
    } catch (const std::exception& e) {
      r.fail(key, e.what());
    }
  };
  DataSplit split;
  auto train = open(data, "train_files", train_files, true);
  split.train = train;
  // An evaluation set: `prefix`files, read with the training vocabulary (a larger token is an error).
  auto eval_set = [&](OptionReader& r, const std::string& prefix) -> std::shared_ptr<Dataset> {
    const std::string key = prefix + "files";
    if (!r.has(key)) r.fail_self("expected " + key + ": a glob or a list of globs of token shards");
    auto eval = open(r, key, files(r, key), false);
    if (eval->num_classes() > train->num_classes()) {
      r.fail(key, "tokens up to " + std::to_string(eval->num_classes() - 1) +
                      " but the training shards' vocabulary is " + std::to_string(train->num_classes()) +
                      ": set vocab_size");
    }
    return eval;
  };
  if (data.has("eval_files")) split.eval = eval_set(data, "eval_");
  open_eval_sets(context, split, eval_set);
  return split;
}

}  // namespace baton
