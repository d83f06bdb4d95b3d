// The optimizers and learning-rate schedules by name: each registered once here (write it in
// src/optim, register it, test it).
#include "baton/core/registry.h"

#include <stdexcept>

#include <torch/torch.h>

#include "baton/optim/optimizers.h"
#include "baton/optim/scheduler.h"
#include "optim/builders.h"

namespace baton {
namespace {

using Optimizers = Registry<std::shared_ptr<torch::optim::Optimizer>, const OptimizerOptions&, std::vector<at::Tensor>>;

const Optimizers& optimizer_registry() {
  static const Optimizers optimizers(
      "optimizer", Optimizers::Order::kRegistration,
      {{"sgd", make_sgd}, {"adam", make_adam}, {"adamw", make_adamw}, {"decoupled_sgdw", make_decoupled_sgdw}});
  return optimizers;
}

using Schedulers = Registry<std::shared_ptr<Scheduler>, const SchedulerOptions&>;

const Schedulers& scheduler_registry() {
  static const Schedulers schedulers("scheduler", Schedulers::Order::kRegistration,
                                     {{"constant", make_constant_schedule},
                                      {"step", make_step_schedule},
                                      {"multistep", make_multistep_schedule},
                                      {"exponential", make_exponential_schedule},
                                      {"linear", make_linear_schedule},
                                      {"linear_warmup", make_linear_schedule},
                                      {"cosine_warmup", make_cosine_warmup_schedule},
                                      {"polynomial", make_polynomial_schedule},
                                      {"one_cycle", make_one_cycle_schedule},
                                      {"wsd", make_wsd_schedule}});
  return schedulers;
}

}  // namespace

std::vector<std::string> optimizer_names() { return optimizer_registry().names(); }

std::shared_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerOptions& spec,
                                                        std::vector<at::Tensor> parameters) {
  if (!optimizer_registry().contains(spec.name()))
    throw std::invalid_argument(unknown_name("optimizer", spec.name(), optimizer_names()));
  check_optimizer(spec);
  return optimizer_registry().make(spec.name(), spec, std::move(parameters));
}

std::vector<std::string> scheduler_names() { return scheduler_registry().names(); }

std::shared_ptr<Scheduler> make_scheduler(const SchedulerOptions& spec) {
  if (!scheduler_registry().contains(spec.name()))
    throw std::invalid_argument(unknown_name("scheduler", spec.name(), scheduler_names()));
  check_schedule(spec);
  return scheduler_registry().make(spec.name(), spec);
}

}  // namespace baton
