// LoRA fine-tuning (Hu et al. 2021), Composer's way: an algorithm that rewrites the model at init.
// Adapters go on the linear layers `targets` names, everything else is frozen, and checkpoints hold
// the adapters (with the run's state) but not the frozen base, which the model's own folder gives
// back on resume. PEFT is the reference: the same parameterisation, initialisation and scaling, and
// an adapter PEFT wrote can be the starting point (`init: {from: DIR}`).
//
//   algorithms:
//     lora: {r: 16, alpha: 32, dropout: 0.05, targets: [q_proj, v_proj]}
//
// `baton export CKPT --format hf --merge-lora` folds the adapters into the weights; `--format peft`
// writes them as an adapter folder PEFT loads (baton/models/lora.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "baton/core/algorithm.h"
#include "baton/core/options.h"

namespace baton {

class LoraOptions {
  BATON_ARG(int64_t, r) = 8;         // the adapters' rank
  BATON_ARG(double, alpha) = 8;      // scaling = alpha / r
  BATON_ARG(double, dropout) = 0.0;  // on the adapters' input, in training
  // Layer names ("q_proj" matches every layer so named; a full name, one layer) or kinds: "attention",
  // "mlp", "all_linear" (every adaptable layer; the output head is never one). Empty: the
  // architecture's default, PEFT's (q_proj and v_proj; GPT-2's c_attn).
  BATON_ARG(std::vector<std::string>, targets);
  BATON_ARG(bool, rslora) = false;           // scaling alpha / sqrt(r) (rank-stabilised)
  BATON_ARG(std::string, init) = "default";  // "default" (PEFT's: A kaiming-uniform, B zeros) or "gaussian"
  // A PEFT adapter folder to start from (`init: {from: DIR}`): its rank, alpha, rslora, dropout and
  // layers are used, and its tensors are the adapters' first values.
  BATON_ARG(std::string, init_from);
  BATON_ARG(bool, checkpoint_base) = false;  // checkpoints hold the frozen base's tensors too
};

class Lora : public Algorithm {
 public:
  ~Lora() override;
  explicit Lora(LoraOptions options = LoraOptions());
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool required_on_load() const override { return true; }
  std::string sharding_blocker(Sharding sharding) const override;
  // After init: the layers adapted, and the trainable parameters' count against the model's.
  int adapted_layers() const;
  int64_t trainable_params() const;
  int64_t total_params() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
