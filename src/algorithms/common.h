// Helpers the algorithms share (not installed).
#pragma once

#include <stdexcept>
#include <string>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "baton/core/state.h"
#include "baton/data/dataloader.h"
#include "baton/models/model.h"
#include "baton/optim/scheduler.h"

namespace baton::detail {

// The state's model as a baton::Model (for its loss); throws naming the algorithm when it is not.
inline Model& model_of(State& state, const std::string& algorithm) {
  auto* model = dynamic_cast<Model*>(state.model.get());
  if (model == nullptr) throw std::invalid_argument(algorithm + ": the state's model is not a baton::Model");
  return *model;
}

// The fraction of max_duration done (0 without one).
inline double elapsed(const State& state) { return state.elapsed_duration().value_or(0.0); }

// Time values of this run in batches: epochs need the training loader, durations max_duration.
inline ScheduleClock clock_of(const State& state) {
  ScheduleClock clock;
  if (state.dataloader && state.dataloader_label == "train") {
    clock.batches_per_epoch = state.dataloader->num_batches();
    clock.batch_size = state.dataloader->batch_size();
  } else if (state.dataloader_len) {
    clock.batches_per_epoch = *state.dataloader_len;
  }
  if (state.max_duration) {
    try {
      clock.max_batches = clock.to_batches(*state.max_duration);
    } catch (const std::invalid_argument&) {  // tokens, seconds: no duration fractions
    }
  }
  return clock;
}

// Targets as per-class probabilities [N, classes]: class indices become one-hot; soft targets
// are kept.
inline at::Tensor soft_targets(const at::Tensor& target, int64_t classes) {
  if (at::isFloatingType(target.scalar_type()) && target.dim() == 2) return target;
  return torch::one_hot(target.to(torch::kLong), classes).to(torch::kFloat);
}

// Requires image batches [N, C, H, W].
inline void require_images(const at::Tensor& input, const std::string& algorithm) {
  if (input.dim() != 4) {
    throw std::invalid_argument(algorithm + " needs image batches [N, C, H, W], got inputs of shape " +
                                c10::str(input.sizes()));
  }
}

// Mixed precision as the trainer sets it (for algorithms that run the model themselves).
class Autocast {
 public:
  explicit Autocast(bool on) : on_(on) {
    if (!on_) return;
    was_enabled_ = at::autocast::is_cpu_enabled();
    was_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~Autocast() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(was_dtype_);
  }
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool on_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

}  // namespace baton::detail
