#include "baton/optim/optimizers.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <typeinfo>

#include <torch/torch.h>

#include "baton/core/options.h"
#include "optim/builders.h"
#include "optim/decoupled_sgdw.h"

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

void check_adam(const OptimizerOptions& spec) {
  const std::string who = "optimizer '" + spec.name() + "': ";
  require_option(spec.beta1() >= 0 && spec.beta1() < 1, "beta1", who + "beta1 must be in [0, 1)");
  require_option(spec.beta2() >= 0 && spec.beta2() < 1, "beta2", who + "beta2 must be in [0, 1)");
  require_option(std::isfinite(spec.eps()) && spec.eps() > 0, "eps", who + "eps must be a positive number");
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

std::shared_ptr<torch::optim::Optimizer> make_adam(const OptimizerOptions& spec, std::vector<at::Tensor> parameters) {
  check_adam(spec);
  return std::make_shared<torch::optim::Adam>(std::move(parameters), torch::optim::AdamOptions(spec.lr())
                                                                         .betas({spec.beta1(), spec.beta2()})
                                                                         .eps(spec.eps())
                                                                         .weight_decay(spec.weight_decay()));
}

std::shared_ptr<torch::optim::Optimizer> make_adamw(const OptimizerOptions& spec, std::vector<at::Tensor> parameters) {
  check_adam(spec);
  return std::make_shared<torch::optim::AdamW>(std::move(parameters), torch::optim::AdamWOptions(spec.lr())
                                                                          .betas({spec.beta1(), spec.beta2()})
                                                                          .eps(spec.eps())
                                                                          .weight_decay(spec.weight_decay()));
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
    return std::make_shared<torch::optim::AdamW>(std::move(with_options),
                                                 static_cast<const torch::optim::AdamWOptions&>(like.defaults()));
  }
  if (kind == "adam") {
    return std::make_shared<torch::optim::Adam>(std::move(with_options),
                                                static_cast<const torch::optim::AdamOptions&>(like.defaults()));
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

}  // namespace baton
