#include "baton/models/lora.h"

#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/io/file.h"
#include "baton/io/write.h"
#include "baton/models/safetensors.h"

namespace baton {

namespace F = torch::nn::functional;

double LoraSpec::scaling() const {
  return rslora ? alpha / std::sqrt(static_cast<double>(r)) : alpha / static_cast<double>(r);
}

AdaptableLinearImpl::AdaptableLinearImpl(const AdaptableLinearOptions& options) : options_(options) {
  const int64_t in = options.in_features, out = options.out_features;
  weight = register_parameter("weight", options.transposed ? torch::empty({in, out}) : torch::empty({out, in}));
  if (options.bias) bias = register_parameter("bias", torch::zeros({out}));
  torch::NoGradGuard no_grad;  // nn.Linear's initialisation (a model's own init usually follows)
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
}

at::Tensor AdaptableLinearImpl::base(const at::Tensor& x) const {
  if (!options_.transposed) return F::linear(x, weight, bias);
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = weight.size(1);
  if (sizes.size() > 1) sizes.front() = -1;  // a trace (TorchScript export) takes any batch size
  const at::Tensor flat = x.reshape({-1, weight.size(0)});
  return (bias.defined() ? torch::addmm(bias, flat, weight) : torch::mm(flat, weight)).view(sizes);
}

at::Tensor AdaptableLinearImpl::delta(const at::Tensor& x) {
  if (!lora_A) return {};
  const at::Tensor in =
      spec_.dropout > 0 && is_training() ? F::dropout(x, F::DropoutFuncOptions().p(spec_.dropout).training(true)) : x;
  return lora_B(lora_A(in)) * spec_.scaling();
}

at::Tensor AdaptableLinearImpl::forward(const at::Tensor& x) {
  at::Tensor y = base(x);
  if (lora_A) y = y + delta(x);
  return y;
}

void AdaptableLinearImpl::add_adapter(const LoraSpec& spec) {
  if (spec.r < 1) throw std::invalid_argument("lora: r is " + std::to_string(spec.r) + "; it must be 1 or more");
  if (lora_A) throw std::invalid_argument("lora: the layer already has an adapter");
  spec_ = spec;
  const auto options = weight.options();
  lora_A =
      register_module("lora_A", torch::nn::Linear(torch::nn::LinearOptions(options_.in_features, spec.r).bias(false)));
  lora_B =
      register_module("lora_B", torch::nn::Linear(torch::nn::LinearOptions(spec.r, options_.out_features).bias(false)));
  lora_A->to(options.device(), options.dtype().toScalarType());
  lora_B->to(options.device(), options.dtype().toScalarType());
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(lora_A->weight, std::sqrt(5.0));
  lora_B->weight.zero_();
  lora_A->train(is_training());
  lora_B->train(is_training());
  weight.set_requires_grad(false);
  if (bias.defined()) bias.set_requires_grad(false);
}

void AdaptableLinearImpl::merge_adapter() {
  if (!lora_A) return;
  torch::NoGradGuard no_grad;
  const at::Tensor product = torch::mm(lora_B->weight.to(at::kFloat), lora_A->weight.to(at::kFloat)) * spec_.scaling();
  weight.add_((options_.transposed ? product.t() : product).to(weight.scalar_type()));
  unregister_module("lora_A");
  unregister_module("lora_B");
  lora_A = nullptr;
  lora_B = nullptr;
}

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kPeftKeyPrefix = "base_model.model.";
constexpr const char* kClassifierPrefix = "module.";
constexpr int64_t kMaxRank = 65536;  // an adapter's rank: far above any published one, and no overflow

[[noreturn]] void adapter_fail(const std::string& file, const std::string& key, const std::string& why) {
  throw std::invalid_argument(file + ": " + key + ": " + why);
}

// adapter_config.json's LoRA settings; what baton does not apply is refused by name.
LoraSpec read_adapter_config(const std::string& file, const json& c, std::string& base_model) {
  if (!c.is_object()) throw std::invalid_argument(file + ": not a JSON object");
  if (c.value("peft_type", std::string("LORA")) != "LORA") {
    adapter_fail(file, "peft_type", "'" + c.value("peft_type", std::string()) + "': baton applies LORA adapters only");
  }
  auto number = [&](const char* key, double fallback) {
    if (!c.contains(key) || c[key].is_null()) return fallback;
    if (!c[key].is_number()) adapter_fail(file, key, "expected a number");
    return c[key].get<double>();
  };
  auto flag = [&](const char* key) { return c.contains(key) && c[key].is_boolean() && c[key].get<bool>(); };
  LoraSpec spec;
  const double r = number("r", 8);
  if (!(r >= 1 && r <= kMaxRank && r == std::floor(r))) {
    adapter_fail(file, "r", json(r).dump() + ": must be a whole number from 1 to " + std::to_string(kMaxRank));
  }
  spec.r = static_cast<int64_t>(r);
  spec.alpha = number("lora_alpha", 8);
  if (!(spec.alpha > 0 && std::isfinite(spec.alpha))) {
    adapter_fail(file, "lora_alpha", json(spec.alpha).dump() + ": must be a positive number");
  }
  spec.dropout = number("lora_dropout", 0);
  if (!(spec.dropout >= 0 && spec.dropout < 1)) {
    adapter_fail(file, "lora_dropout", json(spec.dropout).dump() + ": must be from 0 to below 1");
  }
  spec.rslora = flag("use_rslora");
  if (flag("use_dora")) adapter_fail(file, "use_dora", "DoRA adapters are not implemented (plain LoRA only)");
  if (c.value("bias", std::string("none")) != "none") {
    adapter_fail(file, "bias",
                 "'" + c.value("bias", std::string()) + "': adapters that train biases are not implemented");
  }
  for (const char* key : {"rank_pattern", "alpha_pattern"}) {
    if (c.contains(key) && c[key].is_object() && !c[key].empty())
      adapter_fail(file, key, "per-layer ranks and alphas are not implemented");
  }
  if (c.contains("modules_to_save") && c["modules_to_save"].is_array() && !c["modules_to_save"].empty())
    adapter_fail(file, "modules_to_save", "fully trained modules beside the adapters are not implemented");
  base_model = c.contains("base_model_name_or_path") && c["base_model_name_or_path"].is_string()
                   ? c["base_model_name_or_path"].get<std::string>()
                   : "";
  return spec;
}

[[noreturn]] void layer_fail(const std::string& what, const std::string& layer, const std::string& why) {
  throw std::invalid_argument(what + ": layer '" + layer + "' " + why);
}

std::string shape_mismatch(const at::Tensor& a, const at::Tensor& b, const std::vector<int64_t>& want_a,
                           const std::vector<int64_t>& want_b, int64_t r) {
  return "has lora_A " + c10::str(a.sizes()) + " and lora_B " + c10::str(b.sizes()) + ", this model's take " +
         c10::str(at::IntArrayRef(want_a)) + " and " + c10::str(at::IntArrayRef(want_b)) + " (r " + std::to_string(r) +
         "); is it an adapter for another model?";
}

}  // namespace

std::vector<std::pair<std::string, AdaptableLinear>> adaptable_layers(torch::nn::Module& model) {
  std::vector<std::pair<std::string, AdaptableLinear>> out;
  for (const auto& item : model.named_modules("", /*include_self=*/true)) {
    auto layer = std::dynamic_pointer_cast<AdaptableLinearImpl>(item.value());
    if (!layer) continue;
    std::string name = item.key();
    if (name.rfind(kClassifierPrefix, 0) == 0) name.erase(0, std::string(kClassifierPrefix).size());
    out.emplace_back(name, AdaptableLinear(layer));
  }
  return out;
}

int merge_adapters(torch::nn::Module& model) {
  int merged = 0;
  for (auto& [name, layer] : adaptable_layers(model)) {
    if (!layer->has_adapter()) continue;
    layer->merge_adapter();
    ++merged;
  }
  return merged;
}

PeftAdapter read_peft_adapter(const std::string& folder) {
  const fs::path config_file = fs::path(folder) / "adapter_config.json";
  const fs::path weights_file = fs::path(folder) / "adapter_model.safetensors";
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    throw std::invalid_argument(folder + ": not a folder (a PEFT adapter is the folder save_pretrained wrote)" +
                                where_relative(folder));
  }
  json config;
  try {
    config = json::parse(read_file(config_file.string(), {.what = "the adapter's config", .max_bytes = 1 << 20}));
  } catch (const json::exception& e) {
    throw std::invalid_argument(config_file.string() + ": not JSON (" + std::string(e.what()) + ")");
  }
  PeftAdapter adapter;
  adapter.spec = read_adapter_config(config_file.string(), config, adapter.base_model);
  const std::string prefix = kPeftKeyPrefix;
  for (const auto& [key, tensor] : read_safetensors(weights_file.string())) {
    const bool a = key.ends_with(".lora_A.weight"), b = key.ends_with(".lora_B.weight");
    if (!key.starts_with(prefix) || (!a && !b)) {
      throw std::invalid_argument(weights_file.string() + ": '" + key +
                                  "' is not a LoRA adapter's tensor (base_model.model.<layer>.lora_A.weight or "
                                  "lora_B.weight)");
    }
    const std::string layer =
        key.substr(prefix.size(), key.size() - prefix.size() - std::string(".lora_A.weight").size());
    auto& pair = adapter.layers[layer];
    (a ? pair.first : pair.second) = tensor;
  }
  for (const auto& [layer, pair] : adapter.layers) {
    if (!pair.first.defined() || !pair.second.defined()) {
      throw std::invalid_argument(weights_file.string() + ": layer '" + layer + "' has only its " +
                                  (pair.first.defined() ? "lora_A" : "lora_B") + " tensor");
    }
  }
  if (adapter.layers.empty()) throw std::invalid_argument(weights_file.string() + ": holds no adapter tensors");
  return adapter;
}

std::vector<std::pair<std::string, AdaptableLinear>> attach_peft_adapter(torch::nn::Module& model,
                                                                         const PeftAdapter& adapter,
                                                                         const std::string& what) {
  std::map<std::string, AdaptableLinear> by_name;
  for (const auto& [name, layer] : adaptable_layers(model)) by_name.emplace(name, layer);
  std::vector<std::pair<std::string, AdaptableLinear>> out;
  for (const auto& [name, pair] : adapter.layers) {  // every layer checked before any changes
    const auto it = by_name.find(name);
    if (it == by_name.end()) layer_fail(what, name, "is not one of this model's; is it an adapter for another model?");
    const auto& o = it->second->options();
    const std::vector<int64_t> want_a = {adapter.spec.r, o.in_features}, want_b = {o.out_features, adapter.spec.r};
    if (pair.first.sizes().vec() != want_a || pair.second.sizes().vec() != want_b) {
      layer_fail(what, name, shape_mismatch(pair.first, pair.second, want_a, want_b, adapter.spec.r));
    }
    if (it->second->has_adapter()) layer_fail(what, name, "has an adapter already");
    out.emplace_back(name, it->second);
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, layer] : out) {
    layer->add_adapter(adapter.spec);
    const auto& pair = adapter.layers.at(name);
    layer->lora_A->weight.copy_(pair.first);
    layer->lora_B->weight.copy_(pair.second);
  }
  return out;
}

std::size_t save_peft_adapter(torch::nn::Module& model, const std::string& folder, const std::string& base_model) {
  NamedTensors tensors;
  std::set<std::string> targets;
  LoraSpec spec;
  bool transposed = false;
  for (auto& [name, layer] : adaptable_layers(model)) {
    if (!layer->has_adapter()) continue;
    spec = layer->adapter();
    transposed = transposed || layer->options().transposed;
    targets.insert(name.substr(name.rfind('.') + 1));
    const std::string key = kPeftKeyPrefix + name;
    tensors.emplace_back(key + ".lora_A.weight", layer->lora_A->weight.detach().to(torch::kCPU).contiguous());
    tensors.emplace_back(key + ".lora_B.weight", layer->lora_B->weight.detach().to(torch::kCPU).contiguous());
  }
  if (tensors.empty()) {
    throw std::invalid_argument(
        "--format peft: the model carries no LoRA adapters (algorithms: {lora: ...} puts them on)");
  }
  const json config = {
      {"peft_type", "LORA"},
      {"task_type", "CAUSAL_LM"},
      {"base_model_name_or_path", base_model},
      {"r", spec.r},
      {"lora_alpha", spec.alpha == std::floor(spec.alpha) ? json(static_cast<int64_t>(spec.alpha)) : json(spec.alpha)},
      {"lora_dropout", spec.dropout},
      {"use_rslora", spec.rslora},
      {"target_modules", json(std::vector<std::string>(targets.begin(), targets.end()))},
      {"fan_in_fan_out", transposed},
      {"bias", "none"},
      {"init_lora_weights", true},
      {"inference_mode", true},
      {"use_dora", false},
      {"modules_to_save", nullptr},
      {"rank_pattern", json::object()},
      {"alpha_pattern", json::object()}};
  write_file_atomically((fs::path(folder) / "adapter_config.json").string(), config.dump(2) + "\n");
  write_safetensors((fs::path(folder) / "adapter_model.safetensors").string(), tensors, {{"format", "pt"}});
  return tensors.size();
}

}  // namespace baton
