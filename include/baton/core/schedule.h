// What State knows of a learning-rate schedule (baton/optim's schedulers are ones): the rate and
// momentum as functions of the batch count, in Time units that a ScheduleClock turns into batches.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "baton/core/time.h"

namespace baton {

// Converts Time values into batches for one run.
struct ScheduleClock {
  int64_t batches_per_epoch = 0;
  int64_t batch_size = 0;
  double max_batches = 0;         // max_duration in batches
  int64_t tokens_per_sample = 0;  // data sets of token windows: the window; 0 otherwise

  // Throws std::invalid_argument for a unit it cannot convert (iterations, seconds; tokens without
  // tokens_per_sample).
  double to_batches(const Time& t) const;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual std::string name() const = 0;
  // The learning rate at `batch`, for a parameter group whose initial rate is `base_lr`.
  virtual double lr(double base_lr, double batch, const ScheduleClock& clock) const = 0;
  // The momentum at `batch`, for schedules that cycle it (one_cycle). Default: none.
  virtual std::optional<double> momentum(double /*batch*/, const ScheduleClock& /*clock*/) const {
    return std::nullopt;
  }
};

}  // namespace baton
