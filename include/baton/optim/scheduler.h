// Learning-rate schedules in Time units, stepped every batch (the interface: baton/core/schedule.h).
//
//   auto schedule = baton::make_scheduler(SchedulerOptions().name("cosine_warmup").t_warmup(Time::parse("1ep")));
//   double lr = schedule->lr(base_lr, batch, clock);
//
// A schedule is a function of the batch count (the timestamp's batch when the batch starts) and
// of a ScheduleClock that turns Time values ("2ep", "500ba", "0.3dur") into batches.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "baton/core/options.h"
#include "baton/core/schedule.h"
#include "baton/core/time.h"

namespace baton {

class SchedulerOptions {
  BATON_ARG(std::string, name) = "constant";
  BATON_ARG(double, alpha) = 1.0;                       // constant: the multiplier until t_max
  BATON_ARG(double, alpha_i) = 1.0;                     // linear, linear_warmup: start multiplier
  BATON_ARG(double, alpha_f) = 0.0;                     // linear*, cosine_warmup, polynomial: end multiplier
  BATON_ARG(double, gamma) = 0.1;                       // step, multistep, exponential: the decay
  BATON_ARG(double, power) = 2.0;                       // polynomial
  BATON_ARG(Time, t_max) = Time::from_duration(1.0);    // linear*, cosine_warmup, polynomial, constant: the end
  BATON_ARG(Time, t_warmup) = Time::from_batch(0);      // *_warmup, polynomial: linear warm-up from 0
  BATON_ARG(Time, step_size) = Time::from_epoch(1);     // step
  BATON_ARG(std::vector<Time>, milestones);             // multistep
  BATON_ARG(Time, decay_period) = Time::from_epoch(1);  // exponential: gamma per this period
  // wsd (warmup, stable, decay; torchtitan's): the decay's length at the end of max_duration.
  // Default: everything after t_warmup.
  BATON_ARG(std::optional<Time>, t_decay);
  BATON_ARG(std::string, decay_shape) = "linear";  // wsd: linear, cosine or sqrt (1 - sqrt)
  // one_cycle (as torch.optim.lr_scheduler.OneCycleLR over max_duration, cosine annealing):
  BATON_ARG(std::optional<double>, max_lr);  // Default: the optimizer's lr
  BATON_ARG(double, pct_start) = 0.3;
  BATON_ARG(double, div_factor) = 25.0;
  BATON_ARG(double, final_div_factor) = 1e4;
  BATON_ARG(bool, cycle_momentum) = true;
  BATON_ARG(double, base_momentum) = 0.85;
  BATON_ARG(double, max_momentum) = 0.95;
};

// constant, step, multistep, exponential, linear, linear_warmup, cosine_warmup, polynomial,
// one_cycle, wsd. Throws std::invalid_argument for an unknown name (listing the known ones).
std::shared_ptr<Scheduler> make_scheduler(const SchedulerOptions& spec);

std::vector<std::string> scheduler_names();

}  // namespace baton
