#include "baton/models/checkpointing.h"

#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include <torch/torch.h>

#include "baton/core/precision.h"
#include "baton/models/surgery.h"

namespace baton {
namespace {

namespace nn = torch::nn;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The generator a tensor on `device` draws from, and its state: the recomputation restores it.
at::Generator generator_of(const c10::Device& device) {
  return device.is_cuda() ? at::globalContext().defaultGenerator(device)
                          : at::globalContext().defaultGenerator(c10::Device(c10::kCPU));
}

at::Tensor state_of(at::Generator& generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_state(at::Generator& generator, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

// The precision whose autocast is on for `device` now (kFp32: none): the recomputation runs under it.
Precision autocast_of(c10::DeviceType device) {
  if (!autocast_enabled(device)) return Precision::kFp32;
  return autocast_dtype(device) == c10::ScalarType::Half ? Precision::kAmpFp16 : Precision::kAmpBf16;
}

// What a node of the backward graph keeps of its unit: the module (a copy of the slot's handle: it
// shares the module), the hooks, and without recomputation the forward's own graph.
struct UnitHandle : torch::CustomClassHolder {
  UnitHandle(nn::AnyModule u, std::shared_ptr<UnitHooks> h) : unit(std::move(u)), hooks(std::move(h)) {}
  nn::AnyModule unit;
  std::shared_ptr<UnitHooks> hooks;
  at::Tensor input;   // the forward's input as a leaf of its graph (without recomputation)
  at::Tensor output;  // and its output, the root of that graph
};

// The unit's forward as one node: with recomputation it keeps only its input and backward computes
// the activations again (the random generator's state and the buffers as the forward had them);
// without, the forward's graph is kept inside the node and backward runs through it. The hooks run
// around each pass.
struct UnitCall : torch::autograd::Function<UnitCall> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, nn::AnyModule unit, bool recompute,
                            std::shared_ptr<UnitHooks> hooks) {
    auto handle = c10::make_intrusive<UnitHandle>(unit, hooks);
    if (hooks) hooks->before_forward();
    at::Tensor y;
    if (recompute) {
      at::Generator generator = generator_of(x.device());
      ctx->saved_data["rng"] = state_of(generator);
      ctx->saved_data["autocast"] = static_cast<int64_t>(autocast_of(x.device().type()));
      ctx->save_for_backward({x});
      y = unit.forward(x);  // grad mode is off here
    } else {
      torch::AutoGradMode enabled(true);
      handle->input = x.detach().requires_grad_(x.requires_grad());
      handle->output = unit.forward(handle->input);
      y = handle->output.detach();
    }
    if (hooks) hooks->after_forward();
    ctx->saved_data["unit"] = c10::IValue::make_capsule(handle);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto handle = c10::static_intrusive_pointer_cast<UnitHandle>(ctx->saved_data["unit"].toCapsule());
    if (handle->hooks) handle->hooks->before_backward();
    at::Tensor input;
    if (handle->output.defined()) {
      input = handle->input;
      torch::autograd::backward({handle->output}, {grads[0]});
      handle->output = at::Tensor();  // the graph is spent
    } else {
      input = recompute_backward(ctx, handle->unit, grads[0]);
    }
    if (handle->hooks) handle->hooks->after_backward();
    return {input.requires_grad() ? input.grad() : at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }

  // The forward again from the saved input, as it ran (generator, buffers, autocast), and its backward.
  static at::Tensor recompute_backward(AutogradContext* ctx, nn::AnyModule& unit, const at::Tensor& grad) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    std::vector<at::Tensor> buffers;  // as the forward left them: restored after
    for (const auto& b : unit.ptr()->buffers()) buffers.push_back(b.clone());
    at::Generator generator = generator_of(x.device());
    const at::Tensor now = state_of(generator);
    set_state(generator, ctx->saved_data["rng"].toTensor());
    at::Tensor input = x.detach().requires_grad_(x.requires_grad());
    {
      torch::AutoGradMode enabled(true);
      at::Tensor y;
      {
        const AutocastGuard autocast(static_cast<Precision>(ctx->saved_data["autocast"].toInt()), x.device().type());
        y = unit.forward(input);
      }
      torch::autograd::backward({y}, {grad});
    }
    set_state(generator, now);
    torch::NoGradGuard no_grad;
    const auto live = unit.ptr()->buffers();
    for (std::size_t i = 0; i < live.size(); ++i) live[i].copy_(buffers[i]);
    return input;
  }
};

bool composite(nn::Module& m) { return !m.children().empty(); }

// Calls f(owner, slot name, the slot's module) for each slot of each Replaceable in `model`, the
// Replaceables collected first (f may refill the slots).
void for_each_slot(nn::Module& model, const std::function<void(Replaceable&, const std::string&, nn::AnyModule&)>& f) {
  std::vector<Replaceable*> owners;
  if (auto* self = dynamic_cast<Replaceable*>(&model)) owners.push_back(self);
  for (const auto& m : model.modules(/*include_self=*/false)) {
    if (auto* r = dynamic_cast<Replaceable*>(m.get())) owners.push_back(r);
  }
  for (Replaceable* owner : owners) {
    for (const std::string& name : owner->slot_names()) f(*owner, name, owner->slot(name));
  }
}

// The kinds of the model's slots that are blocks (modules with children), with how many slots each fills.
std::map<std::string, int> slot_kinds(nn::Module& model) {
  std::map<std::string, int> kinds;
  for_each_slot(model, [&](Replaceable&, const std::string&, nn::AnyModule& slot) {
    if (composite(*slot.ptr())) ++kinds[module_kind(*slot.ptr())];
  });
  return kinds;
}

}  // namespace

std::string module_kind(const nn::Module& module) {
  std::string name = module.name();
  const auto template_start = name.find('<');
  const auto scope = name.rfind("::", template_start);
  if (scope != std::string::npos && (template_start == std::string::npos || scope < template_start)) {
    name.erase(0, scope + 2);
  }
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0) name.resize(name.size() - 4);
  return name;
}

std::vector<std::string> repeated_unit_kinds(nn::Module& model) {
  std::vector<std::string> out;
  for (const auto& [kind, count] : slot_kinds(model)) {
    if (count >= 2 && kind != "Stack") out.push_back(kind);  // a Stack holds blocks; it is none
  }
  return out;
}

int for_each_unit(nn::Module& model, const std::vector<std::string>& kinds, const std::string& key,
                  const std::function<void(Replaceable& owner, const std::string& slot)>& f) {
  std::set<std::string> wanted;
  const std::map<std::string, int> present = slot_kinds(model);
  std::string known;
  for (const auto& [kind, count] : present) known += (known.empty() ? "" : ", ") + kind;
  for (const std::string& kind : kinds) {
    if (kind == "auto") {
      const auto repeated = repeated_unit_kinds(model);
      if (repeated.empty()) {
        throw std::invalid_argument(key + ": auto: the model has no repeated blocks (" +
                                    (known.empty() ? std::string("no blocks at all") : "its blocks: " + known) +
                                    "); name the kinds, or leave it off");
      }
      wanted.insert(repeated.begin(), repeated.end());
    } else if (present.count(kind) == 0) {
      throw std::invalid_argument(std::string(key)
                                      .append(": the model has no ")
                                      .append(kind)
                                      .append(" block (its blocks: ")
                                      .append(known.empty() ? std::string("none") : known)
                                      .append(")"));
    } else {
      wanted.insert(kind);
    }
  }
  int units = 0;
  std::set<const nn::Module*> inside;  // modules of a unit already taken: not units of their own
  for_each_slot(model, [&](Replaceable& owner, const std::string& name, nn::AnyModule& slot) {
    const std::shared_ptr<nn::Module> unit = slot.ptr();
    if (inside.count(&owner) || !composite(*unit) || wanted.count(module_kind(*unit)) == 0) return;
    for (const auto& m : unit->modules()) inside.insert(m.get());
    f(owner, name);
    ++units;
  });
  return units;
}

int checkpoint_activations(nn::Module& model, const std::vector<std::string>& kinds) {
  int marked = 0;  // newly: a unit marked before counts once
  for_each_unit(model, kinds, "activation_checkpointing", [&](Replaceable& owner, const std::string& slot) {
    if (!owner.recomputed(slot)) owner.set_recomputed(slot, true), ++marked;
  });
  return marked;
}

at::Tensor unit_forward(const nn::AnyModule& unit, const at::Tensor& input, bool recompute,
                        const std::shared_ptr<UnitHooks>& hooks) {
  return UnitCall::apply(input, unit, recompute, hooks);
}

}  // namespace baton
