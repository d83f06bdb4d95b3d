// `baton generate` as a library call (include/baton/runs/generate_text.h).
#include "baton/runs/generate_text.h"

#include <filesystem>
#include <fstream>
#include <optional>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/core/device.h"
#include "baton/data/text_tokenizer.h"
#include "baton/io/file.h"
#include "baton/models/generate.h"
#include "baton/models/hf.h"
#include "baton/models/lora.h"
#include "baton/runs/model_commands.h"
#include "baton/train/recipe.h"
#include "baton/train/recipe_file.h"
#include "baton/train/trainer.h"
#include "baton/train/weights_file.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

// generation_config.json's sampling, then what the request sets.
GenerateOptions options_of(const GenerateRequest& r, const std::string& folder) {
  GenerateOptions o;
  const fs::path file = fs::path(folder) / "generation_config.json";
  if (!folder.empty() && fs::exists(file)) {
    const auto g = nlohmann::json::parse(read_file(file.string(), {.what = "the generation config"}), nullptr, false);
    if (g.is_object()) {
      if (g.value("do_sample", false)) {
        o.temperature(g.value("temperature", 1.0)).top_k(g.value("top_k", int64_t{50})).top_p(g.value("top_p", 1.0));
      }
      o.repetition_penalty(g.value("repetition_penalty", 1.0));
      if (g.contains("max_new_tokens") && g["max_new_tokens"].is_number_integer())
        o.max_new_tokens(g["max_new_tokens"].get<int64_t>());
      if (g.contains("eos_token_id")) {
        const auto& e = g["eos_token_id"];
        if (e.is_number_integer()) o.stop_tokens({e.get<int64_t>()});
        if (e.is_array()) o.stop_tokens(e.get<std::vector<int64_t>>());
      }
    }
  }
  if (r.max_new_tokens) o.max_new_tokens(*r.max_new_tokens);
  if (r.temperature) o.temperature(*r.temperature);
  if (r.top_k) o.top_k(*r.top_k);
  if (r.top_p) o.top_p(*r.top_p);
  if (r.repetition_penalty) o.repetition_penalty(*r.repetition_penalty);
  return o.seed(r.seed).ignore_eos(r.ignore_eos);
}

// The model and the folder its tokenizer is in.
std::pair<std::shared_ptr<Model>, std::string> model_of(const GenerateRequest& r) {
  std::error_code ec;
  if (fs::is_directory(r.source, ec)) {
    if (!r.load.empty()) throw RecipeError("--load takes a recipe's checkpoint; " + r.source + " is a model's folder");
    try {
      std::shared_ptr<Model> model = load_hf_model(r.source);
      if (!r.adapter.empty()) {
        attach_peft_adapter(*model, read_peft_adapter(r.adapter), "--adapter " + r.adapter);
        merge_adapters(*model);
      }
      return {model, r.source};
    } catch (const std::exception& e) {
      throw RecipeError(e.what());
    }
  }
  if (!r.adapter.empty()) {
    throw RecipeError(
        "--adapter goes on a model's folder; with a recipe, name the adapter in it "
        "(algorithms: {lora: {init: {from: " +
        r.adapter + "}}}) or --load the LoRA run's checkpoint");
  }
  TrainingRun run = build_run(Recipe::load(r.source, sets_with_device(r.sets, r.device)));
  if (hf_config_of(*run.options.model()) == nullptr)
    throw RecipeError(r.source + ": model.name is not hf: generate takes a Hugging Face language model");
  if (!r.load.empty()) trainer_with_weights(run.options, r.load);  // the weights into the model
  merge_adapters(*run.options.model());  // a LoRA run's: the merged model's tokens, and faster steps
  return {run.options.model(), run.model_path};
}

}  // namespace

std::vector<Generated> generate_text(const GenerateRequest& r,
                                     const std::function<void(std::size_t, const std::string&)>& on_text) {
  if (r.prompts.empty()) throw RecipeError("no prompt: give --prompt TEXT or --prompts FILE");
  sets_with_device({}, r.device);  // a device this machine has
  const auto [model, folder] = model_of(r);
  std::optional<TextTokenizer> loaded;
  try {
    loaded = TextTokenizer::load(folder);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(e.what());
  }
  const TextTokenizer& codec = *loaded;
  const int64_t vocab = hf_config_of(*model)->vocab_size;
  if (codec.vocab_size() > vocab) {
    throw RecipeError(folder + ": the tokenizer has " + std::to_string(codec.vocab_size()) +
                      " tokens, more than the model's embeddings (" + std::to_string(vocab) +
                      "): not this model's tokenizer");
  }
  const GenerateOptions options = options_of(r, folder);
  std::vector<std::vector<int64_t>> prompts;
  for (const auto& p : r.prompts) {
    try {
      prompts.push_back(r.special_tokens ? codec.encode_with_special_tokens(p) : codec.encode(p));
    } catch (const std::invalid_argument& e) {
      throw RecipeError("a prompt: " + std::string(e.what()));
    }
  }
  model->to(parse_device(r.device));
  Generator generator(model);
  std::vector<std::vector<int64_t>> so_far(prompts.size());
  std::vector<std::size_t> shown(prompts.size(), 0);
  std::vector<std::vector<int64_t>> out;
  try {
    out = generator.generate(prompts, options, [&](std::size_t i, int64_t token) {
      if (!on_text) return;
      so_far[i].push_back(token);
      const std::string text = codec.decode(so_far[i]);
      if (text.size() > shown[i]) on_text(i, text.substr(shown[i]));
      shown[i] = std::max(shown[i], text.size());
    });
  } catch (const std::invalid_argument& e) {
    throw RecipeError(e.what());
  }
  std::vector<Generated> generated;
  for (std::size_t i = 0; i < out.size(); ++i) {
    generated.push_back({r.prompts[i], out[i], codec.decode(out[i]), generator.truncated()[i]});
  }
  return generated;
}

}  // namespace baton
