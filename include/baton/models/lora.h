// LoRA (Hu et al. 2021) on a model's linear layers, as PEFT computes it: y = W x + b +
// scaling * B (A dropout(x)), with A [r, in] and B [out, r] the only trained tensors and scaling
// alpha / r (alpha / sqrt(r) rank-stabilised). The `lora` algorithm (baton/algorithms/lora.h) puts
// adapters on the layers it targets; this is the layer that carries them.
//
//   AdaptableLinear q(AdaptableLinearOptions(768, 768));
//   q->add_adapter(LoraSpec{.r = 16, .alpha = 32});   // lora_A kaiming-uniform, lora_B zeros: y unchanged
//   q->merge_adapter();                               // W += scaling * B A; the adapter gone
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace baton {

struct LoraSpec {
  int64_t r = 8;
  double alpha = 8;
  double dropout = 0;
  bool rslora = false;  // scaling alpha / sqrt(r) (Kalajdzievski 2023) instead of alpha / r
  double scaling() const;
};

struct AdaptableLinearOptions {
  AdaptableLinearOptions(int64_t in, int64_t out) : in_features(in), out_features(out) {}
  int64_t in_features;
  int64_t out_features;
  bool bias = true;
  // The weight stored [in, out] (GPT-2's Conv1D; PEFT's fan_in_fan_out) instead of [out, in].
  bool transposed = false;
};

// A linear layer ("weight", "bias": the names Hugging Face's checkpoints use) that can carry one
// LoRA adapter ("lora_A.weight" [r, in], "lora_B.weight" [out, r]: PEFT's names).
class AdaptableLinearImpl : public torch::nn::Module {
 public:
  explicit AdaptableLinearImpl(const AdaptableLinearOptions& options);
  at::Tensor forward(const at::Tensor& x);
  // The layer without its adapter: x W^T + b.
  at::Tensor base(const at::Tensor& x) const;
  // The adapter's term, scaling * B A dropout(x) (undefined without an adapter).
  at::Tensor delta(const at::Tensor& x);

  // Adds an adapter initialised as PEFT's default: A kaiming-uniform (a = sqrt(5)), B zeros. The
  // base's weight and bias stop training. Throws std::invalid_argument for r < 1 or a second adapter.
  void add_adapter(const LoraSpec& spec);
  bool has_adapter() const { return static_cast<bool>(lora_A); }
  const LoraSpec& adapter() const { return spec_; }
  // W += scaling * B A (transposed for a [in, out] weight); the adapter removed.
  void merge_adapter();

  const AdaptableLinearOptions& options() const { return options_; }
  at::Tensor weight, bias;
  torch::nn::Linear lora_A{nullptr}, lora_B{nullptr};

 private:
  AdaptableLinearOptions options_;
  LoraSpec spec_;
};
TORCH_MODULE(AdaptableLinear);

// The layers of `model` that can carry an adapter, named as Hugging Face's checkpoints name them (a
// Classifier's "module." left out): "model.layers.0.self_attn.q_proj".
std::vector<std::pair<std::string, AdaptableLinear>> adaptable_layers(torch::nn::Module& model);
// Folds every adapter into its layer's weight (the model is then the base architecture again).
// Returns how many there were.
int merge_adapters(torch::nn::Module& model);

// A PEFT LoRA adapter folder: adapter_config.json and adapter_model.safetensors.
struct PeftAdapter {
  LoraSpec spec;
  std::string base_model;                                           // base_model_name_or_path
  std::map<std::string, std::pair<at::Tensor, at::Tensor>> layers;  // layer name -> (lora_A, lora_B)
};
// Throws std::invalid_argument naming the file and key for what baton cannot apply (DoRA, biases,
// per-layer ranks, another PEFT method).
PeftAdapter read_peft_adapter(const std::string& folder);
// Puts the adapter's layers on `model` with its tensors as their values (the layers it names must be
// the model's, their shapes the layer's; `what` names the adapter in messages). Returns the layers
// adapted; throws std::invalid_argument naming the layer otherwise, leaving the model as it was.
std::vector<std::pair<std::string, AdaptableLinear>> attach_peft_adapter(torch::nn::Module& model,
                                                                         const PeftAdapter& adapter,
                                                                         const std::string& what);
// The model's adapters as PEFT saves them (PEFT's from_pretrained loads the folder onto the base).
// Returns how many tensors were written; throws when the model has none.
std::size_t save_peft_adapter(torch::nn::Module& model, const std::string& folder, const std::string& base_model);

}  // namespace baton
