// Model surgery: replacing a model's layers (BlurPool, Squeeze-Excite, stochastic depth, ...).
//
// torch::nn::Module::replace_module changes the registry but not the member a C++ forward()
// calls, so a model that surgery may change calls its replaceable children through slots:
//
//   struct NetImpl : baton::Replaceable {
//     NetImpl() { conv_ = add_slot("conv", torch::nn::Conv2d(3, 16, 3)); fc_ = add_slot("fc", ...); }
//     at::Tensor forward(at::Tensor x) { return call(fc_, call(conv_, x).flatten(1)); }
//     int conv_, fc_;
//   };
//   baton::replace_modules(*net, [](const std::string& path, torch::nn::Module& child)
//       -> std::optional<torch::nn::AnyModule> { ... });
//
// The zoo's models (fashion_cnn, mlp, resnet20) are built this way.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace baton {

class UnitHooks;

// A module whose children are slots that surgery can refill. Each slot is registered as a
// child under its name, so parameter names are "<slot>.<name>" as for any child.
class Replaceable : public torch::nn::Module {
 public:
  // The slots' names, in the order they were added.
  const std::vector<std::string>& slot_names() const { return names_; }
  // The module in a slot. Throws std::out_of_range for an unknown name.
  torch::nn::AnyModule& slot(const std::string& name);
  // Puts `module` in the slot (and the registry) instead of what was there. The new module takes
  // this module's training mode.
  void replace(const std::string& name, torch::nn::AnyModule module);
  // Whether backward recomputes the slot's activations instead of keeping them while it trains
  // (activation checkpointing: baton/models/checkpointing.h). Throws std::out_of_range for an
  // unknown name.
  void set_recomputed(const std::string& name, bool on);
  bool recomputed(const std::string& name) const;
  // What runs around the slot's forward and backward while it trains (sharded training gathers its
  // parameters: baton/models/checkpointing.h); nullptr for none. Throws std::out_of_range for an
  // unknown name.
  void set_unit_hooks(const std::string& name, std::shared_ptr<UnitHooks> hooks);
  const std::shared_ptr<UnitHooks>& unit_hooks(const std::string& name) const;

 protected:
  Replaceable() = default;
  explicit Replaceable(std::string name) : torch::nn::Module(std::move(name)) {}
  // Adds a slot and returns its index for call().
  int add_slot(const std::string& name, torch::nn::AnyModule module);
  template <typename ModuleHolder>
  int add_slot(const std::string& name, ModuleHolder module) {
    return add_slot(name, torch::nn::AnyModule(std::move(module)));
  }
  // The slot's forward (recomputed in backward when set so).
  at::Tensor call(int index, const at::Tensor& input);
  std::size_t num_slots() const { return slots_.size(); }

 private:
  std::size_t index_of(const std::string& name) const;
  std::vector<std::string> names_;
  std::vector<torch::nn::AnyModule> slots_;
  struct SlotMode {
    bool recomputed = false;
    std::shared_ptr<UnitHooks> hooks;
  };
  std::vector<SlotMode> modes_;
};

// Slots run one after another: forward(x) = slot_n(...slot_1(x)). Slots are named "0", "1", ...
class StackImpl : public Replaceable {
 public:
  StackImpl() : Replaceable("Stack") {}
  template <typename ModuleHolder>
  void push_back(ModuleHolder module) {
    add_slot(std::to_string(num_slots()), torch::nn::AnyModule(std::move(module)));
  }
  at::Tensor forward(at::Tensor x);
  std::size_t size() const { return num_slots(); }
};
TORCH_MODULE(Stack);

// What to put instead of `child` (found at `path`, e.g. "module.layer2.0.conv1"), or nullopt to
// keep it.
using SurgeryPolicy =
    std::function<std::optional<torch::nn::AnyModule>(const std::string& path, torch::nn::Module& child)>;

// Offers every slot of every Replaceable module in `root` (root included) to `policy`, once,
// and returns how many it replaced. Modules the policy puts in are not offered again, so a
// policy that wraps a layer does not wrap its own wrapper.
int replace_modules(torch::nn::Module& root, const SurgeryPolicy& policy);

// After surgery: removes from `optimizer` the parameters `model` no longer has, and adds the ones
// it gained to the first parameter group (with that group's options). Optimizer state of the
// parameters that stay is kept.
void sync_optimizer_params(torch::optim::Optimizer& optimizer, torch::nn::Module& model);

}  // namespace baton
