#include "baton/optim/optimizers.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <typeinfo>

#include <torch/torch.h>
#include <torch/version.h>

#include "baton/core/options.h"
#include "optim/builders.h"
#include "optim/decoupled_sgdw.h"
#include "optim/fused_adam.h"

namespace baton {
namespace {

// A bad value names its option (OptionError's key), so that a recipe points at that key.
void require_option(bool ok, const std::string& key, const std::string& what) {
  if (!ok) throw OptionError(key, what);
}

torch::optim::SGDOptions sgd_options(const OptimizerOptions& spec) {
  const std::string who = "optimizer '" + spec.name() + "': ";
  require_option(std::isfinite(spec.momentum()) && spec.momentum() >= 0, "momentum",
                 who + "momentum must not be negative");
  require_option(spec.dampening() >= 0 && spec.dampening() <= 1, "dampening", who + "dampening must be in [0, 1]");
  require_option(!spec.nesterov() || (spec.momentum() > 0 && spec.dampening() == 0), "nesterov",
                 who + "nesterov needs momentum > 0 and dampening 0");
  return torch::optim::SGDOptions(spec.lr())
      .momentum(spec.momentum())
      .dampening(spec.dampening())
      .nesterov(spec.nesterov());
}

// Checks Adam's options; whether its step is fused (fused: true where the LibTorch lacks the
// kernels is refused, saying how to get them).
bool check_adam(const OptimizerOptions& spec) {
  const std::string who = "optimizer '" + spec.name() + "': ";
  require_option(spec.beta1() >= 0 && spec.beta1() < 1, "beta1", who + "beta1 must be in [0, 1)");
  require_option(spec.beta2() >= 0 && spec.beta2() < 1, "beta2", who + "beta2 must be in [0, 1)");
  require_option(std::isfinite(spec.eps()) && spec.eps() > 0, "eps", who + "eps must be a positive number");
  require_option(!spec.fused().value_or(false) || detail::fused_adam_built(), "fused",
                 who + "fused: true needs LibTorch 2.4 or later, and this baton's is " + TORCH_VERSION +
                     ": make build builds against python3's PyTorch 2.x when it has one (pip install torch; "
                     "docs/building.md), or set fused: false");
  return spec.fused().value_or(detail::fused_adam_built());
}

}  // namespace

void check_optimizer(const OptimizerOptions& spec) {
  const std::string who = "optimizer '" + spec.name() + "': ";
  require_option(std::isfinite(spec.lr()) && spec.lr() > 0, "lr",
                 who + "lr must be a positive number, got " + std::to_string(spec.lr()));
  require_option(std::isfinite(spec.weight_decay()) && spec.weight_decay() >= 0, "weight_decay",
                 who + "weight_decay must not be negative");
}

std::shared_ptr<torch::optim::Optimizer> make_sgd(const OptimizerOptions& spec, std::vector<at::Tensor> parameters) {
  return std::make_shared<torch::optim::SGD>(std::move(parameters),
                                             sgd_options(spec).weight_decay(spec.weight_decay()));
}

namespace {

// Adam or AdamW (Plain, its Options), through the fused kernels where check_adam says (Fused).
template <class Plain, class Fused, class Options>
std::shared_ptr<torch::optim::Optimizer> make_adam_kind(const OptimizerOptions& spec,
                                                        std::vector<at::Tensor> parameters) {
  const bool fused = check_adam(spec);
  const auto options =
      Options(spec.lr()).betas({spec.beta1(), spec.beta2()}).eps(spec.eps()).weight_decay(spec.weight_decay());
  if (fused) return std::make_shared<Fused>(std::move(parameters), options);
  return std::make_shared<Plain>(std::move(parameters), options);
}

}  // namespace

std::shared_ptr<torch::optim::Optimizer> make_adam(const OptimizerOptions& spec, std::vector<at::Tensor> parameters) {
  return make_adam_kind<torch::optim::Adam, detail::FusedAdam, torch::optim::AdamOptions>(spec, std::move(parameters));
}

std::shared_ptr<torch::optim::Optimizer> make_adamw(const OptimizerOptions& spec, std::vector<at::Tensor> parameters) {
  return make_adam_kind<torch::optim::AdamW, detail::FusedAdamW, torch::optim::AdamWOptions>(spec,
                                                                                             std::move(parameters));
}

std::shared_ptr<torch::optim::Optimizer> make_decoupled_sgdw(const OptimizerOptions& spec,
                                                             std::vector<at::Tensor> parameters) {
  return std::make_shared<detail::DecoupledSGDW>(std::move(parameters), sgd_options(spec), spec.weight_decay());
}

std::string optimizer_kind(const torch::optim::Optimizer& optimizer) {
  if (dynamic_cast<const detail::DecoupledSGDW*>(&optimizer)) return "decoupled_sgdw";
  if (dynamic_cast<const torch::optim::SGD*>(&optimizer)) return "sgd";
  if (dynamic_cast<const torch::optim::AdamW*>(&optimizer)) return "adamw";
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer)) return "adam";
  return typeid(optimizer).name();
}

std::shared_ptr<torch::optim::Optimizer> make_optimizer_like(const torch::optim::Optimizer& like,
                                                             std::vector<std::vector<at::Tensor>> groups) {
  const auto& given = like.param_groups();
  if (groups.size() != given.size()) {
    throw std::invalid_argument("make_optimizer_like: " + std::to_string(groups.size()) +
                                " groups for an optimizer of " + std::to_string(given.size()));
  }
  std::vector<torch::optim::OptimizerParamGroup> with_options;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    with_options.emplace_back(std::move(groups[g]), given[g].options().clone());
  }
  const std::string kind = optimizer_kind(like);
  if (kind == "decoupled_sgdw") {
    return std::make_shared<detail::DecoupledSGDW>(std::move(with_options),
                                                   dynamic_cast<const detail::DecoupledSGDW&>(like));
  }
  if (kind == "sgd") {
    return std::make_shared<torch::optim::SGD>(std::move(with_options),
                                               static_cast<const torch::optim::SGDOptions&>(like.defaults()));
  }
  if (kind == "adamw") {
    const auto& defaults = static_cast<const torch::optim::AdamWOptions&>(like.defaults());
    if (dynamic_cast<const detail::FusedAdamW*>(&like))
      return std::make_shared<detail::FusedAdamW>(std::move(with_options), defaults);
    return std::make_shared<torch::optim::AdamW>(std::move(with_options), defaults);
  }
  if (kind == "adam") {
    const auto& defaults = static_cast<const torch::optim::AdamOptions&>(like.defaults());
    if (dynamic_cast<const detail::FusedAdam*>(&like))
      return std::make_shared<detail::FusedAdam>(std::move(with_options), defaults);
    return std::make_shared<torch::optim::Adam>(std::move(with_options), defaults);
  }
  throw std::invalid_argument("make_optimizer_like: optimizer " + kind + " is none of " +
                              join_names(optimizer_names()));
}

namespace {

int64_t bytes_of(const at::Tensor& t) { return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0; }

}  // namespace

int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer) {
  int64_t total = 0;
  for (const auto& entry : optimizer.state()) {
    const torch::optim::OptimizerParamState* state = entry.second.get();
    if (const auto* s = dynamic_cast<const torch::optim::SGDParamState*>(state)) {
      total += bytes_of(s->momentum_buffer());
    } else if (const auto* a = dynamic_cast<const torch::optim::AdamParamState*>(state)) {
      total += bytes_of(a->exp_avg()) + bytes_of(a->exp_avg_sq()) + bytes_of(a->max_exp_avg_sq());
    } else if (const auto* w = dynamic_cast<const torch::optim::AdamWParamState*>(state)) {
      total += bytes_of(w->exp_avg()) + bytes_of(w->exp_avg_sq()) + bytes_of(w->max_exp_avg_sq());
    } else {  // another optimizer's: what it writes
      torch::serialize::OutputArchive archive;
      optimizer.save(archive);
      std::ostringstream out;
      archive.save_to(out);
      return static_cast<int64_t>(out.str().size());
    }
  }
  return total;
}

namespace {

// What optimizer_param_state names: the kind's state tensors, and Adam's step.
template <typename AdamState>
std::map<std::string, at::Tensor> adam_tensors(const AdamState& s) {
  std::map<std::string, at::Tensor> out{{"step", torch::tensor(static_cast<int64_t>(s.step()), torch::kLong)},
                                        {"exp_avg", s.exp_avg()},
                                        {"exp_avg_sq", s.exp_avg_sq()}};
  if (s.max_exp_avg_sq().defined()) out["max_exp_avg_sq"] = s.max_exp_avg_sq();
  return out;
}

template <typename AdamState>
std::unique_ptr<torch::optim::OptimizerParamState> adam_state(const std::map<std::string, at::Tensor>& t) {
  auto s = std::make_unique<AdamState>();
  s->step(t.at("step").template item<int64_t>());
  s->exp_avg(t.at("exp_avg"));
  s->exp_avg_sq(t.at("exp_avg_sq"));
  if (auto it = t.find("max_exp_avg_sq"); it != t.end()) s->max_exp_avg_sq(it->second);
  return s;
}

}  // namespace

std::map<std::string, at::Tensor> optimizer_param_state(const torch::optim::Optimizer& optimizer,
                                                        const at::Tensor& parameter) {
  const std::string kind = optimizer_kind(optimizer);
  if (kind != "sgd" && kind != "decoupled_sgdw" && kind != "adam" && kind != "adamw") {
    throw std::invalid_argument("optimizer_param_state: optimizer " + kind + " is none of " +
                                join_names(optimizer_names()));
  }
  using StateMap = std::decay_t<decltype(optimizer.state())>;
  const auto it = optimizer.state().find(param_state_key<StateMap>(parameter));
  if (it == optimizer.state().end()) return {};
  const torch::optim::OptimizerParamState* state = it->second.get();
  if (kind == "sgd" || kind == "decoupled_sgdw") {
    const at::Tensor& buffer = static_cast<const torch::optim::SGDParamState*>(state)->momentum_buffer();
    if (!buffer.defined()) return {};
    return {{"momentum_buffer", buffer}};
  }
  if (kind == "adam") return adam_tensors(*static_cast<const torch::optim::AdamParamState*>(state));
  return adam_tensors(*static_cast<const torch::optim::AdamWParamState*>(state));
}

void set_optimizer_param_state(torch::optim::Optimizer& optimizer, const at::Tensor& parameter,
                               const std::map<std::string, at::Tensor>& state) {
  using StateMap = std::decay_t<decltype(optimizer.state())>;
  const auto key = param_state_key<StateMap>(parameter);
  if (state.empty()) {
    optimizer.state().erase(key);
    return;
  }
  const std::string kind = optimizer_kind(optimizer);
  if (kind == "sgd" || kind == "decoupled_sgdw") {
    auto s = std::make_unique<torch::optim::SGDParamState>();
    s->momentum_buffer(state.at("momentum_buffer"));
    optimizer.state()[key] = std::move(s);
  } else if (kind == "adam") {
    optimizer.state()[key] = adam_state<torch::optim::AdamParamState>(state);
  } else if (kind == "adamw") {
    optimizer.state()[key] = adam_state<torch::optim::AdamWParamState>(state);
  } else {
    throw std::invalid_argument("set_optimizer_param_state: optimizer " + kind + " is none of " +
                                join_names(optimizer_names()));
  }
}

}  // namespace baton
