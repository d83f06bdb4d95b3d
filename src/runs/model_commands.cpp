// `baton eval`, `predict`, `export` and `tokenize` as library calls (include/baton/runs/model_commands.h).
#include "baton/runs/model_commands.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>

#include <torch/torch.h>

#include "baton/core/callback.h"
#include "baton/core/device.h"
#include "baton/core/options.h"
#include "baton/core/precision.h"
#include "baton/data/image_folder.h"
#include "baton/data/readers.h"
#include "baton/data/text.h"
#include "baton/data/text_tokenizer.h"
#include "baton/data/tokens.h"
#include "baton/data/webdataset.h"
#include "baton/io/file.h"
#include "baton/io/run_dir.h"
#include "baton/io/write.h"
#include "baton/models/export.h"
#include "baton/models/hf.h"
#include "baton/models/lora.h"
#include "baton/models/safetensors.h"
#include "baton/models/zoo.h"
#include "baton/train/checkpoint.h"
#include "baton/train/recipe.h"
#include "baton/train/recipe_file.h"
#include "baton/train/weights_file.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

// An image file or a folder: what `inputs` names when the model trained on image folders.
bool names_images(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return true;
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// The class names the weights were trained with: classes.txt beside them (the run directory's), else
// the recipe's training set's.
std::vector<std::string> class_names(const std::string& weights, const Dataset& train) {
  const auto listed = fs::path(weights).parent_path() / RunDir::kClasses;
  std::error_code ec;
  if (!fs::is_regular_file(listed, ec)) return train.class_names();
  std::vector<std::string> names;
  std::istringstream lines(read_file(listed.string(), {.what = "the class list", .max_bytes = 64 << 20}));
  for (std::string line; std::getline(lines, line);) names.push_back(line);
  if (static_cast<int64_t>(names.size()) != train.num_classes()) {
    throw RecipeError(listed.string() + ": " + std::to_string(names.size()) +
                      " classes, but the recipe's training set has " + std::to_string(train.num_classes()));
  }
  return names;
}

// The data to predict on: the request's inputs (images through the training images' pipeline, or
// an array standardised as the training inputs were), else the recipe's evaluation data.
std::shared_ptr<Dataset> prediction_data(const PredictRequest& request, const TrainingRun& run, Predictions& out) {
  if (request.inputs.empty()) return run.eval_data;
  if (!names_images(request.inputs)) {
    at::Tensor x = as_float_inputs(read_array(request.inputs));
    if (auto* train = dynamic_cast<TensorDataset*>(run.train_data.get())) x = train->standardize(x);
    return std::make_shared<TensorDataset>(x, torch::zeros({x.size(0)}, torch::kLong));
  }
  const ImageFolderOptions* options = nullptr;  // the training images' pipeline
  if (const auto* folder = dynamic_cast<const ImageFolder*>(run.train_data.get())) options = &folder->options();
  if (const auto* shards = dynamic_cast<const WebDataset*>(run.train_data.get())) options = &shards->options().images();
  if (!options) {
    throw RecipeError(request.inputs + ": images, but the recipe trains on another kind of data; give the inputs as " +
                      "IDX or .npy, or a recipe with data.dataset: images or webdataset");
  }
  out.classes = class_names(request.weights, *run.train_data);
  std::shared_ptr<ImageFolder> images;
  try {
    images = ImageFolder::from_files(request.inputs, *options, out.classes);
  } catch (const std::exception& e) {
    throw RecipeError(e.what());
  }
  out.files = images->files();
  return images;
}

struct BuiltModel {
  std::shared_ptr<Model> model;
  std::vector<int64_t> input_shape;
  std::vector<std::shared_ptr<Algorithm>> algorithms;  // the recipe's: its model surgery applies
  int64_t vocab = 0;     // a language model's: its inputs are token ids below this (0: float inputs)
  std::string source{};  // the files it was built from (model.path): a Hugging Face folder's tokenizer
};

BuiltModel from_recipe(const Recipe& recipe) {
  TrainingRun run = build_run(recipe);
  const bool tokens = run.train_data->tokens_per_example() > 0;
  return {run.options.model(), run.model_spec.input_shape(), run.options.algorithms(),
          tokens ? run.model_spec.num_classes() : 0, run.model_path};
}

// An example input to trace the model with: token ids for a language model, else values.
at::Tensor example_input(const BuiltModel& built, c10::Device device) {
  std::vector<int64_t> shape = {2};
  shape.insert(shape.end(), built.input_shape.begin(), built.input_shape.end());
  torch::manual_seed(0);
  if (built.vocab > 0) return torch::randint(built.vocab, shape, torch::kLong).to(device);
  return torch::randn(shape).to(device);
}

// The model a checkpoint's meta names (its name and shapes), with defaults for what it leaves out.
BuiltModel from_model_meta(const nlohmann::json& m) {
  const ModelOptions defaults;
  ModelOptions spec = ModelOptions()
                          .input_shape(m.value("input_shape", std::vector<int64_t>{}))
                          .num_classes(m.value("num_classes", int64_t{10}))
                          .hidden(m.value("hidden", defaults.hidden()))
                          .layers(m.value("layers", defaults.layers()))
                          .width(m.value("width", defaults.width()))
                          .heads(m.value("heads", defaults.heads()))
                          .dropout(m.value("dropout", defaults.dropout()))
                          .mlp_ratio(m.value("mlp_ratio", defaults.mlp_ratio()))
                          .arch(m.value("arch", nlohmann::json()));
  const std::string name = m.value("name", "");
  if (name == "torchscript") return {load_torchscript_classifier(m.value("path", "")), spec.input_shape(), {}};
  if (name == "hf") {  // the config the checkpoint keeps; the weights are the checkpoint's
    const HfConfig config = parse_hf_config(m.value("hf_config", ""), "the checkpoint's model.hf_config");
    return {make_hf_model(config), spec.input_shape(), {}, spec.num_classes(), m.value("path", "")};
  }
  const bool tokens = name.rfind("gpt", 0) == 0;  // gpt and gpt_space take token ids
  return {make_model(name, spec), spec.input_shape(), {}, tokens ? spec.num_classes() : 0};
}

// A LoRA run's checkpoint without its frozen base (the lora algorithm's checkpoint_base: false).
bool holds_adapters_only(const CheckpointFile& ckpt) {
  const nlohmann::json surgery = ckpt.state.values.value("required_on_load", nlohmann::json::array());
  for (const auto& spec : surgery) {
    if (spec.value("name", "") != "lora") continue;
    const nlohmann::json options = spec.value("options", nlohmann::json::object());
    if (!options.is_object() || !options.value("checkpoint_base", false)) return true;
  }
  return false;
}

// The base a LoRA checkpoint's adapters go on: the Hugging Face folder it was trained from.
void load_lora_base(BuiltModel& built, const std::string& checkpoint) {
  std::error_code ec;
  if (built.source.empty() || !fs::is_directory(built.source, ec)) {
    throw RecipeError(checkpoint + ": holds LoRA adapters without their frozen base, whose folder (model.path '" +
                      built.source + "') is not here; pass --recipe RECIPE.yaml naming it");
  }
  if (read_hf_config(built.source).json != hf_config_of(*built.model)->json) {
    throw RecipeError(checkpoint + ": its LoRA adapters were trained on " + built.source +
                      ", whose config.json has changed since; load it onto the folder it was trained from");
  }
  load_hf_weights(*built.model, built.source);  // the weights: checked against the checkpoint's as it loads
}

// The model the checkpoint was trained with: from the request's recipe, else from what baton train
// wrote into the checkpoint (the model's name and shapes; the recipe, which needs the data, when a
// checkpoint has only that).
BuiltModel build_model(const ExportRequest& request) {
  if (!request.recipe.empty())
    return from_recipe(Recipe::load(request.recipe, sets_with_device(request.sets, request.device)));
  if (!is_checkpoint(request.checkpoint)) {
    check_weights_file(request.checkpoint);  // names what is wrong with a file that is not one
    throw RecipeError(request.checkpoint +
                      ": not a baton checkpoint, so it does not say which model it holds; pass --recipe RECIPE.yaml");
  }
  const CheckpointFile ckpt = read_checkpoint(request.checkpoint);
  if (ckpt.meta.contains("model") && ckpt.meta["model"].is_object()) {
    BuiltModel built = from_model_meta(ckpt.meta["model"]);
    if (holds_adapters_only(ckpt)) load_lora_base(built, request.checkpoint);
    return built;
  }
  if (ckpt.meta.contains("recipe") && ckpt.meta["recipe"].is_string()) {
    return from_recipe(Recipe::parse(ckpt.meta["recipe"].get<std::string>(), request.checkpoint + " (its recipe)",
                                     sets_with_device({}, request.device)));
  }
  throw RecipeError(request.checkpoint +
                    ": the checkpoint does not say which model it holds; pass --recipe RECIPE.yaml");
}

// Nothing is written into a folder that already holds a corpus's shards or tokenizer.
void check_corpus_folder(const std::string& out) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return;
  if (!fs::is_directory(out, ec)) throw RecipeError("--out " + out + ": " + file_kind(out) + ", not a folder");
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == kTokenizerFile ||
        (name.ends_with(".bin") && (name.starts_with("train_") || name.starts_with("val_")))) {
      std::string why = "--out " + out;
      why += ": already holds " + name + " (a tokenized corpus): choose a new folder";
      throw RecipeError(why);
    }
  }
}

// The files go to a folder of their own beside `out` (.OUT.tmp.PID), moved into `out` once all are
// written: a failed or killed run leaves nothing in `out` that blocks the next.
class Staging {
 public:
  explicit Staging(const std::string& out) : out_(out) {
    const fs::path target = fs::absolute(out);
    const fs::path parent = target.parent_path();
    std::error_code ec;
    fs::create_directories(parent, ec);
    remove_stale_temporaries(parent.string());  // those of a killed run
    path_ = parent / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
    baton::remove_tree(path_, ec);
    if (!fs::create_directory(path_, ec))
      throw FileError(out + ": cannot make a folder beside it (" + ec.message() + ")");
  }
  ~Staging() {
    std::error_code ec;
    baton::remove_tree(path_, ec);  // what did not go into `out`
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  std::string path() const { return path_.string(); }
  // Every file into `out` (made when missing): then it holds the corpus, whole.
  void commit() {
    std::error_code ec;
    if (!fs::exists(out_, ec) && (fs::rename(path_, out_, ec), !ec)) return;
    fs::create_directories(out_, ec);
    for (const auto& entry : fs::directory_iterator(path_))
      fs::rename(entry.path(), fs::path(out_) / entry.path().filename());
  }

 private:
  std::string out_;
  fs::path path_;
};

// The tokenizer the request names (a model's folder, a tokenizer.json, a SentencePiece .model),
// checked before anything is written.
std::optional<TextTokenizer> given_tokenizer(const TokenizeRequest& request) {
  if (request.tokenizer.empty()) return std::nullopt;
  try {
    return TextTokenizer::load(request.tokenizer);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("--tokenizer ") + e.what());
  }
}

// The tokenizer's files beside the shards (what `data: tokens` and `baton generate` read there):
// tokenizer.model, or tokenizer.json with the tokenizer_config.json beside it. Returns the first.
std::string copy_tokenizer(const TextTokenizer& tokenizer, const std::string& folder) {
  if (const Tokenizer* sentencepiece = tokenizer.sentencepiece()) {
    write_file_atomically((fs::path(folder) / kTokenizerFile).string(), sentencepiece->serialized());
    return kTokenizerFile;
  }
  const fs::path from = tokenizer.file();
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"}) {
    const fs::path file = name == std::string("tokenizer.json") ? from : from.parent_path() / name;
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) {
      write_file_atomically((fs::path(folder) / name).string(), read_file(file.string(), {.what = name}));
    }
  }
  return "tokenizer.json";
}

// A tokenizer trained on the request's texts, written into the staging folder.
Tokenizer trained_tokenizer(TokenizeRequest& request, const std::string& staging) {
  request.training.vocab_size = request.vocab_size;
  if (request.progress) {
    request.progress("training a " + request.training.model_type + " tokenizer of " +
                     std::to_string(request.vocab_size) + " tokens on " + std::to_string(request.texts.size()) +
                     " text(s)");
  }
  return Tokenizer::train(request.texts, (fs::path(staging) / "tokenizer").string(), request.training);
}

}  // namespace

std::vector<std::string> sets_with_device(std::vector<std::string> sets, const std::string& device) {
  if (device.empty()) return sets;
  try {
    parse_device(device);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("--device ") + e.what());
  }
  sets.push_back("device=" + device);
  return sets;
}

std::map<std::string, std::map<std::string, double>> evaluate_recipe(const EvalRequest& request) {
  const std::vector<std::string> sets = sets_with_device(request.sets, request.device);
  check_weights_file(request.weights);  // before the data is read
  TrainingRun run = build_run(Recipe::load(request.recipe, sets));
  if (!run.precision_chosen) run.options.precision(Precision::kFp32);  // outputs not rounded by `auto`
  if (!run.eval_data && run.eval_sets.empty()) {
    throw RecipeError(request.recipe + ": the recipe has no evaluation data (the data set's own, or an eval: section)");
  }
  std::map<std::string, std::map<std::string, double>> out;
  for (const auto& [label, metrics] : trainer_with_weights(run.options, request.weights)->eval())
    out[label].insert(metrics.begin(), metrics.end());
  return out;
}

namespace {

// A language model's predictions (outputs [B, T, V] for targets [B, T]): at each position the top-k
// next tokens and their log-probabilities in place of the logits (a vocabulary's worth a token), and
// the log-probability of the actual next token.
class NextTokens : public Callback {
 public:
  explicit NextTokens(int64_t k) : k_(k) {}
  std::string name() const override { return "NextTokens"; }
  void predict_after_forward(State& state, Logger& /*logger*/) override {
    const at::Tensor logprobs = torch::log_softmax(state.outputs.to(torch::kFloat), -1);
    auto [values, ids] = logprobs.topk(std::min(k_, logprobs.size(-1)), -1);
    ids_.push_back(ids.to(torch::kCPU));
    const at::Tensor target = state.batch.target.to(logprobs.device(), torch::kLong).unsqueeze(-1);
    targets_.push_back(logprobs.gather(-1, target).squeeze(-1).to(torch::kCPU));
    state.outputs = values;
  }
  at::Tensor ids() const { return torch::cat(ids_); }
  at::Tensor targets() const { return torch::cat(targets_); }

 private:
  int64_t k_;
  std::vector<at::Tensor> ids_, targets_;
};

// predictions.npy -> predictions.logprobs.npy
std::string beside_out(const std::string& out, const std::string& kind) {
  const fs::path p(out);
  return (p.parent_path() / (p.stem().string() + "." + kind + ".npy")).string();
}

}  // namespace

Predictions predict_recipe(const PredictRequest& request) {
  const std::vector<std::string> sets = sets_with_device(request.sets, request.device);
  const Recipe recipe = Recipe::load(request.recipe, sets);
  std::vector<std::string> inputs = recipe.input_files();  // its data too
  inputs.insert(inputs.end(), {request.weights, request.inputs, request.recipe});
  if (request.top_k < 1) throw RecipeError("--top-k " + std::to_string(request.top_k) + ": expected 1 or more");
  Predictions out;
  if (!request.out.empty()) {  // before anything is read
    check_output(request.out, "--out", inputs);
    out.logprobs_file = beside_out(request.out, "logprobs");
    out.target_logprobs_file = beside_out(request.out, "target_logprobs");
  }
  std::error_code ec;
  out.replaced = !request.out.empty() && fs::exists(request.out, ec);
  check_weights_file(request.weights);  // before the data is read
  TrainingRun run = build_run(recipe);
  if (!run.precision_chosen) run.options.precision(Precision::kFp32);  // outputs not rounded by `auto`
  const auto trainer = trainer_with_weights(run.options, request.weights);
  const std::shared_ptr<Dataset> data = prediction_data(request, run, out);
  if (!data) throw RecipeError(request.recipe + ": no evaluation data to predict on; give --inputs FILE");
  if (data->size() == 0)
    throw RecipeError((request.inputs.empty() ? request.recipe : request.inputs) + ": no examples to predict on");
  // The evaluation's batches: eval_subset_num_batches counts the same batches as in eval.
  const auto& evaluators = run.options.eval_dataloaders();
  const int64_t batch = evaluators.empty() ? 1000 : evaluators.front().loader->batch_size();
  DataLoader loader(data, DataLoaderOptions().batch_size(batch).shuffle(false));
  if (data->tokens_per_example() > 0) {  // a language model: its next tokens, not its logits
    for (const std::string& file : {out.logprobs_file, out.target_logprobs_file}) {
      if (!file.empty()) check_output(file, "--out", inputs);
    }
    auto next = std::make_shared<NextTokens>(request.top_k);
    trainer->state().callbacks.push_back(next);  // the engine picks it up at the next event
    // The limit counts what is kept: per token k ids (8 bytes), k log-probabilities and the target's (4).
    const uint64_t kept = request.max_output_bytes / static_cast<uint64_t>(12 * request.top_k + 4) *
                          static_cast<uint64_t>(4 * request.top_k);
    out.logprobs = torch::cat(trainer->predict(loader, kept)).to(torch::kCPU);
    out.outputs = next->ids();
    out.target_logprobs = next->targets();
    if (!request.out.empty()) {
      write_npy(request.out, out.outputs);
      write_npy(out.logprobs_file, out.logprobs);
      write_npy(out.target_logprobs_file, out.target_logprobs);
    }
  } else {
    out.outputs = torch::cat(trainer->predict(loader, request.max_output_bytes)).to(torch::kCPU);
    if (!request.out.empty()) write_npy(request.out, out.outputs);
    out.logprobs_file.clear();
    out.target_logprobs_file.clear();
  }
  out.examples = data->size();
  out.eval_subset_num_batches = run.options.eval_subset_num_batches();
  return out;
}

Exported export_model(const ExportRequest& request) {
  sets_with_device({}, request.device);  // a device this machine has, before anything is read
  std::vector<std::string> inputs = {request.checkpoint, request.recipe};
  if (!request.recipe.empty()) {
    const auto read = Recipe::load(request.recipe, request.sets).input_files();
    inputs.insert(inputs.end(), read.begin(), read.end());
  }
  if (request.format == "peft" && request.merge_lora) {
    throw RecipeError("--format peft writes the adapters themselves: leave out --merge-lora");
  }
  if (request.format == "hf" || request.format == "peft") {  // a folder
    check_output_folder(request.out, request.out_flag, inputs);
  } else {
    check_output(request.out, request.out_flag, inputs);  // not over an input, a device, a FIFO, a folder
  }
  check_weights_file(request.checkpoint);
  const c10::Device device = parse_device(request.device);
  BuiltModel built = build_model(request);
  // The model as it was trained: surgery (the checkpoint's, the recipe's) applied, then the weights,
  // on the device the exported module's tensors are to live on.
  const auto trainer = trainer_with_weights(
      TrainerOptions().model(built.model).algorithms(built.algorithms).device(device), request.checkpoint);
  Exported out;
  out.input_shape = built.input_shape;
  if (request.format == "peft") {  // the adapters alone, as PEFT saves them
    Staging staging(request.out);
    out.tensors = save_peft_adapter(*built.model, staging.path(), built.source);
    staging.commit();
    return out;
  }
  if (request.merge_lora && merge_adapters(*built.model) == 0) {
    throw RecipeError("--merge-lora: " + request.checkpoint + "'s model carries no LoRA adapters");
  }
  if (request.format == "safetensors") {
    // The network's own names (a zoo ResNet's are torchvision's): loads with safetensors.torch.load_file.
    const NamedTensors tensors = model_tensors(*built.model);
    write_safetensors(request.out, tensors, {{"format", "pt"}, {"producer", "baton"}});
    out.tensors = tensors.size();
    return out;
  }
  if (request.format == "hf") {  // what from_pretrained loads
    if (hf_config_of(*built.model) == nullptr) {
      throw RecipeError(
          "--format hf: the checkpoint's model is not a Hugging Face one (model.name: hf); use "
          "--format safetensors for its weights");
    }
    Staging staging(request.out);
    out.tensors = save_hf_model(*built.model, staging.path(), built.source);
    staging.commit();
    return out;
  }
  if (request.format != "torchscript")
    throw RecipeError("--format " + request.format + ": expected torchscript, safetensors, hf or peft");
  const std::string bytes = export_torchscript(*built.model, example_input(built, device));
  write_file_atomically(request.out, bytes);
  out.bytes = bytes.size();
  return out;
}

TokenizedCorpus tokenize_corpus(TokenizeRequest request) {
  if ((request.vocab_size > 0) == !request.tokenizer.empty()) {
    throw RecipeError(
        "give --vocab-size N (train a tokenizer) or --tokenizer PATH (use one: a model's folder, its "
        "tokenizer.json or a SentencePiece .model), not both");
  }
  std::vector<std::string> inputs = request.texts;
  inputs.push_back(request.tokenizer);
  check_output_folder(request.out, "--out", inputs);  // its own files would be read as text
  check_corpus_folder(request.out);
  for (const std::string& text : request.texts) {
    std::error_code ec;
    if (!fs::exists(text, ec)) throw RecipeError(text + ": no such file or folder");
  }
  try {
    std::optional<TextTokenizer> given = given_tokenizer(request);
    Staging staging(request.out);
    request.options.out = staging.path();
    const TextTokenizer tokenizer =
        given ? *given
              : TextTokenizer::of(std::make_shared<const Tokenizer>(trained_tokenizer(request, staging.path())));
    const std::string tokenizer_file = copy_tokenizer(tokenizer, staging.path());
    TokenizedCorpus out;
    out.summary = tokenize_files(request.texts, tokenizer, request.options);
    staging.commit();
    out.tokenizer_path = (fs::path(request.out) / tokenizer_file).string();
    out.vocab_size = tokenizer.vocab_size();
    return out;
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const RecipeError*>(&e) != nullptr || dynamic_cast<const FileError*>(&e) != nullptr) throw;
    throw RecipeError(e.what());  // a text or tokenizer that is not one: the user's input
  }
}

namespace {

TextTokenizer tokenizer_at(const std::string& path) {
  try {
    return TextTokenizer::load(path);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("--tokenizer ") + e.what());
  }
}

// The ids a file holds: a token shard (by its magic), else a JSON list of integers.
std::vector<int64_t> ids_in(const std::string& file) {
  int32_t magic = 0;
  try {
    const ReadableFile opened(file, {.what = "the ids", .max_bytes = 16ull << 30});
    if (::pread(opened.fd(), &magic, sizeof magic, 0) != static_cast<ssize_t>(sizeof magic)) magic = 0;
  } catch (const FileError& e) {
    throw RecipeError(e.what());
  }
  if (magic == kTokenShardMagic || magic == kTokenShardMagic32) {
    try {
      const TokenShard shard(file);
      std::vector<uint32_t> tokens(static_cast<std::size_t>(shard.size()));
      shard.read(0, shard.size(), tokens.data());
      return {tokens.begin(), tokens.end()};
    } catch (const std::runtime_error& e) {
      throw RecipeError(e.what());
    }
  }
  const auto json =
      nlohmann::json::parse(read_file(file, {.what = "the ids", .max_bytes = 1ull << 30}), nullptr, false);
  const auto integer = [](const nlohmann::json& v) { return v.is_number_integer() && v.get<int64_t>() >= 0; };
  if (!json.is_array() || !std::all_of(json.begin(), json.end(), integer)) {
    throw RecipeError(file + ": neither a JSON list of token ids (what --ids prints) nor a token shard (.bin)");
  }
  return json.get<std::vector<int64_t>>();
}

}  // namespace

std::vector<int64_t> text_ids(const std::string& tokenizer, const std::string& file) {
  const TextTokenizer t = tokenizer_at(tokenizer);
  std::string text;
  try {
    text = read_text_file(file);
  } catch (const std::runtime_error& e) {
    throw RecipeError(e.what());
  }
  try {
    return t.encode(text);
  } catch (const std::invalid_argument& e) {  // not UTF-8: the byte named
    throw RecipeError(file + ": " + e.what());
  }
}

std::string ids_text(const std::string& tokenizer, const std::string& file) {
  const TextTokenizer t = tokenizer_at(tokenizer);
  const std::vector<int64_t> ids = ids_in(file);
  const auto bad = std::find_if(ids.begin(), ids.end(), [&](int64_t id) { return id >= t.vocab_size(); });
  if (bad != ids.end()) {
    throw RecipeError(file + ": id " + std::to_string(*bad) + " (position " + std::to_string(bad - ids.begin()) +
                      ") is outside the tokenizer's " + std::to_string(t.vocab_size()) + " tokens (" + t.file() + ")");
  }
  return t.decode(ids);
}

}  // namespace baton
