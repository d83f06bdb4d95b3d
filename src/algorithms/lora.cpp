// LoRA: adapters on the targeted linear layers at init, the rest frozen (baton/algorithms/lora.h).
#include "baton/algorithms/lora.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/core/logger.h"
#include "baton/models/hf.h"
#include "baton/models/lora.h"
#include "baton/models/model.h"
#include "baton/models/surgery.h"

namespace baton {

namespace {

bool ends_with_part(const std::string& name, const std::string& tail) {
  return name == tail ||
         (name.size() > tail.size() && name.ends_with(tail) && name[name.size() - tail.size() - 1] == '.');
}

bool matches(const std::string& name, const std::string& target) {
  if (target == "all_linear" || target == "all-linear") return true;
  if (target == "attention")
    return name.find(".self_attn.") != std::string::npos || name.find(".attn.") != std::string::npos;
  if (target == "mlp") return name.find(".mlp.") != std::string::npos;
  return ends_with_part(name, target);
}

// PEFT's defaults for the architectures baton builds.
std::vector<std::string> default_targets(const torch::nn::Module& model) {
  const auto* m = dynamic_cast<const Model*>(&model);
  const HfConfig* config = m == nullptr ? nullptr : hf_config_of(*m);
  if (config != nullptr && config->family == "gpt2") return {"c_attn"};
  return {"q_proj", "v_proj"};
}

std::string short_names(const std::vector<std::pair<std::string, AdaptableLinear>>& layers) {
  std::set<std::string> names;
  for (const auto& [name, layer] : layers) names.insert(name.substr(name.rfind('.') + 1));
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Optimizers step only what trains: the frozen base leaves their lists (and their state).
void keep_trainable(torch::optim::Optimizer& optimizer, torch::nn::Module& model) {
  sync_optimizer_params(optimizer, model);
  for (auto& group : optimizer.param_groups()) {
    auto& list = group.params();
    list.erase(std::remove_if(list.begin(), list.end(), [](const at::Tensor& p) { return !p.requires_grad(); }),
               list.end());
  }
}

}  // namespace

struct Lora::Impl {
  LoraOptions options_;
  int adapted_ = 0;
  int64_t trainable_ = 0, total_ = 0;

  // The layers to adapt, each target matching one at least.
  std::vector<std::pair<std::string, AdaptableLinear>> chosen(torch::nn::Module& model) const {
    const auto layers = adaptable_layers(model);
    if (layers.empty()) {
      throw std::invalid_argument(
          "lora: the model has no layer LoRA can adapt (the linear layers of a model.name: hf model)");
    }
    const std::vector<std::string> targets = options_.targets().empty() ? default_targets(model) : options_.targets();
    std::vector<std::pair<std::string, AdaptableLinear>> out;
    for (const auto& target : targets) {
      const auto hit =
          std::any_of(layers.begin(), layers.end(), [&](const auto& l) { return matches(l.first, target); });
      if (!hit) {
        throw std::invalid_argument("lora: targets: '" + target +
                                    "' matches no linear layer of the model (its layers: " + short_names(layers) +
                                    "; or attention, mlp, all_linear)");
      }
    }
    for (const auto& layer : layers) {
      if (std::any_of(targets.begin(), targets.end(), [&](const auto& t) { return matches(layer.first, t); })) {
        out.push_back(layer);
      }
    }
    return out;
  }
};

Lora::~Lora() = default;

Lora::Lora(LoraOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.r() < 1) throw std::invalid_argument("r " + std::to_string(options.r()) + ": must be 1 or more");
  if (!(options.alpha() > 0) || !std::isfinite(options.alpha())) {
    throw std::invalid_argument("alpha " + std::to_string(options.alpha()) + ": must be a positive number");
  }
  if (!(options.dropout() >= 0 && options.dropout() < 1)) {
    throw std::invalid_argument("dropout " + std::to_string(options.dropout()) + ": must be from 0 to below 1");
  }
  if (options.init() != "default" && options.init() != "gaussian") {
    throw std::invalid_argument("init '" + options.init() + "': expected default, gaussian or {from: ADAPTER_DIR}");
  }
  impl_->options_ = std::move(options);
}

bool Lora::match(Event event, const State& /*state*/) { return event == Event::kInit; }

std::optional<int> Lora::apply(Event /*event*/, State& state, Logger& logger) {
  if (!state.model) throw std::invalid_argument("lora: no model");
  torch::nn::Module& model = *state.model;
  const LoraOptions& o = impl_->options_;
  std::vector<std::pair<std::string, AdaptableLinear>> layers;
  if (!o.init_from().empty()) {  // the adapter's rank, alpha, dropout, layers and tensors
    layers = attach_peft_adapter(model, read_peft_adapter(o.init_from()), "lora: init.from " + o.init_from());
  } else {
    layers = impl_->chosen(model);
    const LoraSpec spec{.r = o.r(), .alpha = o.alpha(), .dropout = o.dropout(), .rslora = o.rslora()};
    for (auto& [name, layer] : layers) {
      layer->add_adapter(spec);
      torch::NoGradGuard no_grad;
      if (o.init() == "gaussian") layer->lora_A->weight.normal_(0.0, 1.0 / static_cast<double>(spec.r));  // PEFT's
    }
  }
  for (auto& p : model.parameters()) p.set_requires_grad(false);  // PEFT's: the whole base frozen
  for (auto& [name, layer] : layers) {
    layer->lora_A->weight.set_requires_grad(true);
    layer->lora_B->weight.set_requires_grad(true);
  }
  for (const auto& optimizer : state.optimizers) keep_trainable(*optimizer, model);
  impl_->adapted_ = static_cast<int>(layers.size());
  impl_->trainable_ = impl_->total_ = 0;
  state.unsaved_model_tensors.clear();
  for (const auto& item : model.named_parameters()) {
    impl_->total_ += item.value().numel();
    if (item.value().requires_grad()) {
      impl_->trainable_ += item.value().numel();
    } else if (!o.checkpoint_base()) {
      state.unsaved_model_tensors.insert(item.key());
    }
  }
  logger.log_metrics({{"lora/layers", static_cast<double>(impl_->adapted_)},
                      {"lora/trainable_params", static_cast<double>(impl_->trainable_)}});
  return std::nullopt;
}

std::string Lora::sharding_blocker(Sharding sharding) const {
  return sharding == Sharding::kNone ? ""
                                     : "trains adapters on a frozen base, which sharding does not split yet "
                                       "(sharding: none; the adapters' optimizer state is small)";
}

int Lora::adapted_layers() const { return impl_->adapted_; }
int64_t Lora::trainable_params() const { return impl_->trainable_; }
int64_t Lora::total_params() const { return impl_->total_; }

}  // namespace baton
