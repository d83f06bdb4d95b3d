#include "baton/models/surgery.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include <torch/torch.h>

#include "baton/models/checkpointing.h"

namespace baton {

std::size_t Replaceable::index_of(const std::string& name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) throw std::out_of_range(this->name() + " has no slot '" + name + "'");
  return static_cast<std::size_t>(it - names_.begin());
}

torch::nn::AnyModule& Replaceable::slot(const std::string& name) { return slots_[index_of(name)]; }

void Replaceable::set_recomputed(const std::string& name, bool on) { modes_[index_of(name)].recomputed = on; }

bool Replaceable::recomputed(const std::string& name) const { return modes_[index_of(name)].recomputed; }

void Replaceable::set_unit_hooks(const std::string& name, std::shared_ptr<UnitHooks> hooks) {
  modes_[index_of(name)].hooks = std::move(hooks);
}

const std::shared_ptr<UnitHooks>& Replaceable::unit_hooks(const std::string& name) const {
  return modes_[index_of(name)].hooks;
}

at::Tensor Replaceable::call(int index, const at::Tensor& input) {
  const auto i = static_cast<std::size_t>(index);
  const SlotMode& mode = modes_[i];
  if ((mode.recomputed || mode.hooks) && is_training() && torch::GradMode::is_enabled()) {
    return unit_forward(slots_[i], input, mode.recomputed, mode.hooks);
  }
  return slots_[i].forward(input);
}

void Replaceable::replace(const std::string& name, torch::nn::AnyModule module) {
  torch::nn::AnyModule& target = slot(name);
  module.ptr()->train(is_training());
  replace_module(name, module.ptr());
  target = std::move(module);
}

int Replaceable::add_slot(const std::string& name, torch::nn::AnyModule module) {
  if (std::find(names_.begin(), names_.end(), name) != names_.end()) {
    throw std::invalid_argument(this->name() + ": slot '" + name + "' added twice");
  }
  register_module(name, module.ptr());
  names_.push_back(name);
  slots_.push_back(std::move(module));
  modes_.emplace_back();
  return static_cast<int>(slots_.size() - 1);
}

at::Tensor StackImpl::forward(at::Tensor x) {
  for (std::size_t i = 0; i < num_slots(); ++i) x = call(static_cast<int>(i), x);
  return x;
}

int replace_modules(torch::nn::Module& root, const SurgeryPolicy& policy) {
  // Collected first: the tree changes as slots are refilled.
  std::vector<std::pair<std::string, Replaceable*>> owners;
  if (auto* self = dynamic_cast<Replaceable*>(&root)) owners.emplace_back("", self);
  for (const auto& item : root.named_modules("", /*include_self=*/false)) {
    if (auto* r = dynamic_cast<Replaceable*>(item.value().get())) owners.emplace_back(item.key(), r);
  }
  int replaced = 0;
  for (const auto& [path, owner] : owners) {
    for (const std::string& name : owner->slot_names()) {
      torch::nn::AnyModule& current = owner->slot(name);
      const std::string dotted = path.empty() ? name : std::string(path).append(".").append(name);
      std::optional<torch::nn::AnyModule> next = policy(dotted, *current.ptr());
      if (!next) continue;
      owner->replace(name, std::move(*next));
      ++replaced;
    }
  }
  return replaced;
}

namespace {

// Optimizer state is keyed by the parameter's TensorImpl: its address as a string in LibTorch 1.x,
// the pointer itself in 2.x.
template <typename StateMap>
void erase_state(StateMap& state, c10::TensorImpl* impl) {
  if constexpr (std::is_same_v<typename StateMap::key_type, std::string>) {
    std::ostringstream key;
    key << impl;
    state.erase(key.str());
  } else {
    state.erase(impl);
  }
}

}  // namespace

void sync_optimizer_params(torch::optim::Optimizer& optimizer, torch::nn::Module& model) {
  std::set<const void*> in_model;
  const std::vector<at::Tensor> params = model.parameters();
  for (const auto& p : params) in_model.insert(p.unsafeGetTensorImpl());
  std::set<const void*> in_optimizer;
  for (auto& group : optimizer.param_groups()) {
    auto& list = group.params();
    for (const auto& p : list) {
      // Optimizer state is keyed by the tensor's address, which a new tensor may reuse.
      if (in_model.count(p.unsafeGetTensorImpl()) == 0) erase_state(optimizer.state(), p.unsafeGetTensorImpl());
    }
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const at::Tensor& p) { return in_model.count(p.unsafeGetTensorImpl()) == 0; }),
               list.end());
    for (const auto& p : list) in_optimizer.insert(p.unsafeGetTensorImpl());
  }
  if (optimizer.param_groups().empty()) return;
  for (const auto& p : params) {
    if (in_optimizer.count(p.unsafeGetTensorImpl()) == 0) optimizer.param_groups()[0].params().push_back(p);
  }
}

}  // namespace baton
