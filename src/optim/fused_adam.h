// Adam and AdamW whose step is one fused kernel per device and type (LibTorch 2.4's _fused_adam_
// and _fused_adamw_: torch.optim.AdamW(fused=True)), over the state LibTorch's own Adam and AdamW
// hold, so that checkpoints, sharding and resumption are the same either way. Private to src/optim.
#pragma once

#include <cstdint>
#include <map>
#include <type_traits>
#include <vector>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

namespace baton::detail {

// Whether this LibTorch has the fused kernels (2.4 or later).
bool fused_adam_built();

// Each parameter's step count as the kernels take it (a float32 scalar on the parameter's device),
// kept between steps so that a GPU's is not copied over each step; remade when the optimizer's own
// count is not the one last written (a loaded checkpoint, a shard's state set).
class FusedSteps {
 public:
  at::Tensor& of(const at::Tensor& parameter, int64_t step);

 private:
  struct Count {
    at::Tensor tensor;
    int64_t step = -1;
  };
  std::map<const void*, Count> counts_;
};

// One step of `optimizer` (an Adam or, with `decoupled`, an AdamW) through the fused kernels; false
// (nothing done) where they do not apply: a sparse gradient, a device other than the CPU or CUDA.
bool fused_adam_step(torch::optim::Optimizer& optimizer, bool decoupled, FusedSteps& steps);

template <class Base>
class Fused : public Base {
 public:
  using Base::Base;
  at::Tensor step(typename Base::LossClosure closure = nullptr) override {
    at::Tensor loss;
    if (closure) {
      at::AutoGradMode grad(true);
      loss = closure();
    }
    if (!fused_adam_step(*this, std::is_same_v<Base, torch::optim::AdamW>, steps_)) Base::step();
    return loss;
  }

 private:
  FusedSteps steps_;
};

using FusedAdam = Fused<torch::optim::Adam>;
using FusedAdamW = Fused<torch::optim::AdamW>;

}  // namespace baton::detail
