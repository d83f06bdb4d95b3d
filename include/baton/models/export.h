// Export a trained model as TorchScript, for torch::jit::load in C++ and torch.jit.load in Python.
//
//   std::string bytes = baton::export_torchscript(*model, torch::zeros({2, 1, 28, 28}));
//   // write `bytes` to model.pt; torch.jit.load("model.pt")(x) gives the model's logits
#pragma once

#include <string>

#include "baton/models/model.h"

namespace baton {

// The model in evaluation mode and fp32, traced through eval_forward on `example_input` (a batch
// of inputs), as the bytes torch::jit::Module::save writes. The module keeps the model's names
// (parameters, buffers and submodules, e.g. "module.c1.weight") and the traced graph reads them
// as attributes, so the file holds the weights once. The loaded module is then run on other data
// in another batch size (the example reversed, plus one) and checked against the model's own
// outputs: a forward whose control flow depends on the data or the batch size, which tracing
// cannot record, throws std::runtime_error, as does a model the tracer cannot follow. The
// model's training mode is restored.
std::string export_torchscript(Model& model, const at::Tensor& example_input);

// Multiply-adds of one example's forward (eval mode), from the traced graph: convolutions and
// matrix products (the layers that dominate). `example_input` is a batch; the count is divided by
// its size. Throws std::runtime_error when the model cannot be traced.
double count_multiply_adds(Model& model, const at::Tensor& example_input);

}  // namespace baton
