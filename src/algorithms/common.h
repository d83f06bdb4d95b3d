// Helpers the algorithms share (not installed).
#pragma once

#include <stdexcept>
#include <string>

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
// and values are kept (values [N] as [N, 1]).
inline at::Tensor soft_targets(const at::Tensor& target, int64_t classes) {
  // Values (regression, yes/no labels, probabilities already): one row an example.
  if (at::isFloatingType(target.scalar_type())) return target.dim() == 1 ? target.unsqueeze(1) : target;
  return torch::one_hot(target.to(torch::kLong), classes).to(torch::kFloat);
}

// A tensor made on the host (a random draw, indices) where `like` is: copied without the host
// waiting, so drawing on the CPU keeps a run's random stream the same on every device.
inline at::Tensor on_device_of(const at::Tensor& like, const at::Tensor& t) {
  return t.device() == like.device() ? t : t.to(like.device(), /*non_blocking=*/true);
}

// Requires image batches [N, C, H, W].
inline void require_images(const at::Tensor& input, const std::string& algorithm) {
  if (input.dim() != 4) {
    throw std::invalid_argument(algorithm + " needs image batches [N, C, H, W], got inputs of shape " +
                                c10::str(input.sizes()));
  }
}

}  // namespace baton::detail
