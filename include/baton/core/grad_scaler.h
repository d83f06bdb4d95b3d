// GradScaler: dynamic loss scaling for float16 mixed precision (precision: amp_fp16), as PyTorch's
// torch.amp.GradScaler does it; LibTorch's C++ API has none. Gradients of a float16 forward can
// underflow to zero: the loss is multiplied by a large scale before backward, the gradients divided
// by it before the step, and a step whose gradients overflowed (inf/NaN) is skipped while the scale
// shrinks; after `growth_interval` good steps in a row the scale grows again.
//
//   baton::GradScaler scaler;
//   scaler.scale(loss).backward();  // gradients scaled by get_scale()
//   scaler.unscale(*optimizer);     // the true gradients (clip them here); inf/NaN noted on the device
//   scaler.step(*optimizer);        // skipped when a gradient was inf or NaN
//   scaler.update();                // the next step's scale
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "baton/core/options.h"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace baton {

class GradScalerOptions {
  BATON_ARG(double, init_scale) = 65536.0;  // 2^16, PyTorch's
  BATON_ARG(double, growth_factor) = 2.0;   // the scale after growth_interval good steps in a row
  BATON_ARG(double, backoff_factor) = 0.5;  // the scale after a step with inf/NaN gradients
  BATON_ARG(int64_t, growth_interval) = 2000;
};

class GradScaler {
 public:
  ~GradScaler();
  // Throws std::invalid_argument for a scale that is not positive, growth_factor <= 1,
  // backoff_factor outside (0, 1) or growth_interval < 1.
  explicit GradScaler(GradScalerOptions options = GradScalerOptions());

  // loss * get_scale().
  at::Tensor scale(const at::Tensor& loss) const;
  // Divides the gradients of `optimizer`'s parameters by the scale, once per step (later calls
  // before update() do nothing), and notes on their device whether any is inf or NaN: no wait.
  void unscale(torch::optim::Optimizer& optimizer);
  // The optimizer's gradients come from a scaled loss again (an algorithm's own backward, SAM's):
  // the next unscale() divides them, and an overflow in either pass skips the step.
  void mark_scaled(torch::optim::Optimizer& optimizer);
  // unscale() when not done, then the optimizer's step unless a gradient was inf or NaN (reading
  // that flag is the one wait for the device per step, as in PyTorch). Returns whether it stepped.
  bool step(torch::optim::Optimizer& optimizer);
  // Shrinks the scale after a skipped step, grows it after growth_interval good ones; starts the
  // next step.
  void update();

  double get_scale() const;
  // Steps skipped for inf/NaN gradients so far.
  int64_t skipped_steps() const;

  // {"scale", "growth_tracker", "skipped"}: what a resumed run needs to scale as this one would.
  nlohmann::json state_dict() const;
  // Throws std::invalid_argument for a missing or non-positive scale.
  void load_state_dict(const nlohmann::json& state);

 private:
  struct Pending {
    bool unscaled = false;
    bool overflow = false;
    at::Tensor found_inf;  // on the gradients' device
  };
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
