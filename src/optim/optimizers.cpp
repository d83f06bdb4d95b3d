#include "baton/optim/optimizers.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "optim/decoupled_sgdw.h"

namespace baton {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

}  // namespace

std::vector<std::string> optimizer_names() { return {"sgd", "adam", "adamw", "decoupled_sgdw"}; }

std::shared_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerOptions& spec,
                                                        std::vector<at::Tensor> parameters) {
  require(std::isfinite(spec.lr()) && spec.lr() > 0,
          "optimizer '" + spec.name() + "': lr must be a positive number, got " + std::to_string(spec.lr()));
  require(spec.weight_decay() >= 0, "optimizer '" + spec.name() + "': weight_decay must not be negative");
  if (spec.name() == "sgd" || spec.name() == "decoupled_sgdw") {
    require(spec.momentum() >= 0, "optimizer '" + spec.name() + "': momentum must not be negative");
    require(!spec.nesterov() || (spec.momentum() > 0 && spec.dampening() == 0),
            "optimizer '" + spec.name() + "': nesterov needs momentum > 0 and dampening 0");
    auto options = torch::optim::SGDOptions(spec.lr())
                       .momentum(spec.momentum())
                       .dampening(spec.dampening())
                       .nesterov(spec.nesterov());
    if (spec.name() == "sgd") {
      return std::make_shared<torch::optim::SGD>(std::move(parameters), options.weight_decay(spec.weight_decay()));
    }
    return std::make_shared<detail::DecoupledSGDW>(std::move(parameters), options, spec.weight_decay());
  }
  if (spec.name() == "adam" || spec.name() == "adamw") {
    require(spec.beta1() >= 0 && spec.beta1() < 1 && spec.beta2() >= 0 && spec.beta2() < 1,
            "optimizer '" + spec.name() + "': betas must be in [0, 1)");
    if (spec.name() == "adam") {
      return std::make_shared<torch::optim::Adam>(std::move(parameters), torch::optim::AdamOptions(spec.lr())
                                                                             .betas({spec.beta1(), spec.beta2()})
                                                                             .eps(spec.eps())
                                                                             .weight_decay(spec.weight_decay()));
    }
    return std::make_shared<torch::optim::AdamW>(std::move(parameters), torch::optim::AdamWOptions(spec.lr())
                                                                            .betas({spec.beta1(), spec.beta2()})
                                                                            .eps(spec.eps())
                                                                            .weight_decay(spec.weight_decay()));
  }
  std::string known;
  for (const auto& n : optimizer_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown optimizer '" + spec.name() + "' (known: " + known + ")");
}

}  // namespace baton
