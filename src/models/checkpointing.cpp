#include "baton/models/checkpointing.h"

#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include <torch/torch.h>

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

// The unit a node of the backward graph recomputes (a copy of the slot's handle: it shares the module).
struct UnitHandle : torch::CustomClassHolder {
  explicit UnitHandle(nn::AnyModule u) : unit(std::move(u)) {}
  nn::AnyModule unit;
};

// Forward without keeping activations; backward recomputes them from the saved input.
struct Recompute : torch::autograd::Function<Recompute> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, nn::AnyModule unit) {
    at::Generator generator = generator_of(x.device());
    ctx->saved_data["unit"] = c10::IValue::make_capsule(c10::make_intrusive<UnitHandle>(unit));
    ctx->saved_data["rng"] = state_of(generator);
    ctx->save_for_backward({x});
    return unit.forward(x);  // grad mode is off here
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    nn::AnyModule& unit = c10::static_intrusive_pointer_cast<UnitHandle>(ctx->saved_data["unit"].toCapsule())->unit;
    const at::Tensor x = ctx->get_saved_variables()[0];
    std::vector<at::Tensor> buffers;  // as the forward left them: restored after
    for (const auto& b : unit.ptr()->buffers()) buffers.push_back(b.clone());
    at::Generator generator = generator_of(x.device());
    const at::Tensor now = state_of(generator);
    set_state(generator, ctx->saved_data["rng"].toTensor());
    at::Tensor input = x.detach().requires_grad_(x.requires_grad());
    {
      torch::AutoGradMode enabled(true);
      const at::Tensor y = unit.forward(input);
      torch::autograd::backward({y}, {grads[0]});
    }
    set_state(generator, now);
    {
      torch::NoGradGuard no_grad;
      const auto live = unit.ptr()->buffers();
      for (std::size_t i = 0; i < live.size(); ++i) live[i].copy_(buffers[i]);
    }
    return {input.requires_grad() ? input.grad() : at::Tensor(), at::Tensor()};
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

int checkpoint_activations(nn::Module& model, const std::vector<std::string>& kinds) {
  std::set<std::string> wanted;
  const std::map<std::string, int> present = slot_kinds(model);
  std::string known;
  for (const auto& [kind, count] : present) known += (known.empty() ? "" : ", ") + kind;
  for (const std::string& kind : kinds) {
    if (kind == "auto") {
      const auto repeated = repeated_unit_kinds(model);
      if (repeated.empty()) {
        throw std::invalid_argument("activation_checkpointing: auto: the model has no repeated blocks (" +
                                    (known.empty() ? std::string("no blocks at all") : "its blocks: " + known) +
                                    "); name the kinds to recompute, or leave it off");
      }
      wanted.insert(repeated.begin(), repeated.end());
    } else if (present.count(kind) == 0) {
      throw std::invalid_argument("activation_checkpointing: the model has no " + kind +
                                  " block (its blocks: " + (known.empty() ? std::string("none") : known) + ")");
    } else {
      wanted.insert(kind);
    }
  }
  int units = 0;
  std::set<const nn::Module*> inside;  // modules of a unit already recomputed: not units of their own
  for_each_slot(model, [&](Replaceable& owner, const std::string& name, nn::AnyModule& slot) {
    const std::shared_ptr<nn::Module> unit = slot.ptr();
    if (inside.count(&owner) || !composite(*unit) || wanted.count(module_kind(*unit)) == 0) return;
    for (const auto& m : unit->modules()) inside.insert(m.get());
    if (owner.recomputed(name)) return;
    owner.set_recomputed(name, true);
    ++units;
  });
  return units;
}

at::Tensor recomputed_forward(const nn::AnyModule& unit, const at::Tensor& input) {
  return Recompute::apply(input, unit);
}

}  // namespace baton
