// The optimizers and schedules src/optim/registry.cpp registers by name, and the checks every one
// of a kind gets. Each throws OptionError (naming the option) for a value it cannot take.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "baton/optim/optimizers.h"
#include "baton/optim/scheduler.h"

namespace baton {

// The key of a parameter's state in an optimizer's state map: the tensor's address as a string in
// LibTorch 1.x, the pointer itself in 2.x.
template <typename StateMap>
typename StateMap::key_type param_state_key(const at::Tensor& p) {
  if constexpr (std::is_same_v<typename StateMap::key_type, std::string>) {
    std::ostringstream key;
    key << p.unsafeGetTensorImpl();
    return key.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

// lr positive, weight_decay not negative: what every optimizer needs.
void check_optimizer(const OptimizerOptions& spec);
std::shared_ptr<torch::optim::Optimizer> make_sgd(const OptimizerOptions& spec, std::vector<at::Tensor> parameters);
std::shared_ptr<torch::optim::Optimizer> make_adam(const OptimizerOptions& spec, std::vector<at::Tensor> parameters);
std::shared_ptr<torch::optim::Optimizer> make_adamw(const OptimizerOptions& spec, std::vector<at::Tensor> parameters);
// SGD with weight decay decoupled from the learning rate (Composer's DecoupledSGDW).
std::shared_ptr<torch::optim::Optimizer> make_decoupled_sgdw(const OptimizerOptions& spec,
                                                             std::vector<at::Tensor> parameters);

// Times a schedule can count, positive periods, finite numbers: checked when a schedule is made.
void check_schedule(const SchedulerOptions& spec);
std::shared_ptr<Scheduler> make_constant_schedule(const SchedulerOptions& spec);
std::shared_ptr<Scheduler> make_step_schedule(const SchedulerOptions& spec);
std::shared_ptr<Scheduler> make_multistep_schedule(const SchedulerOptions& spec);
std::shared_ptr<Scheduler> make_exponential_schedule(const SchedulerOptions& spec);
std::shared_ptr<Scheduler> make_linear_schedule(const SchedulerOptions& spec);
std::shared_ptr<Scheduler> make_cosine_warmup_schedule(const SchedulerOptions& spec);
std::shared_ptr<Scheduler> make_wsd_schedule(const SchedulerOptions& spec);
std::shared_ptr<Scheduler> make_polynomial_schedule(const SchedulerOptions& spec);
std::shared_ptr<Scheduler> make_one_cycle_schedule(const SchedulerOptions& spec);

}  // namespace baton
