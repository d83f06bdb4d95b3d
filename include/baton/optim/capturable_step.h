// An optimizer step that a CUDA graph can hold: what changes from step to step (the learning rate,
// SGD's momentum, Adam's bias corrections) is read from device scalars that the host writes before
// each replay, with one copy and no wait; the rest is LibTorch's SGD, Adam and AdamW on the same
// state (momentum buffers, moments, step counts), so a checkpoint or an eager step goes on from it.
//
//   optimizer->step();                                  // eagerly once: the state exists
//   baton::CapturableStep step(optimizer);               // the parameters with a gradient now
//   step.prepare();                                      // host: this step's scalars (no wait)
//   step.run();                                          // device: the update (captured once)
//
// Hyper-parameters other than the learning rate and momentum (weight decay, betas, eps) are read
// when the step is built.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace baton {

class CapturableStep {
 public:
  // Throws std::invalid_argument saying why the optimizer has no capturable step (a class other
  // than baton's sgd, decoupled_sgdw, adam and adamw; amsgrad; parameters of one Adam group at
  // different steps).
  explicit CapturableStep(std::shared_ptr<torch::optim::Optimizer> optimizer);
  ~CapturableStep();
  CapturableStep(const CapturableStep&) = delete;
  CapturableStep& operator=(const CapturableStep&) = delete;

  // Host: writes this step's scalars from the groups' current options and counts the step in the
  // optimizer's state (Adam's step), as the eager step would.
  void prepare();
  // Device: the update, reading the scalars prepare() wrote. No host wait, no allocation that
  // depends on the values: safe to capture, and to run eagerly after prepare().
  void run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
