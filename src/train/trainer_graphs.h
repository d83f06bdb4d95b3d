// What the trainer keeps while it trains from CUDA graphs (src/train/trainer_graphs.cpp). Private
// to src/train.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "baton/core/state.h"
#include "baton/optim/capturable_step.h"
#include "cuda/cuda.h"

namespace baton::detail {

// One batch shape's graph: the tensors it reads (the batch) and writes (outputs, loss, gradients).
struct ShapeGraph {
  std::vector<int64_t> key;  // the batch's shapes and types
  int64_t eager_steps = 0;   // warm-up steps taken before the capture
  std::unique_ptr<cuda::Graph> graph;
  std::vector<std::unique_ptr<CapturableStep>> steps;  // per optimizer, the ones the graph holds
  Batch input;
  at::Tensor outputs;
  at::Tensor loss;
  std::vector<at::Tensor> grads;     // per parameter of the model, in order
  std::vector<const void*> weights;  // the parameters' storage when captured, and whether they trained
  std::vector<bool> trained;
};

struct TrainGraphs {
  static constexpr int64_t kWarmupSteps = 3;  // eager steps per shape before its capture
  static constexpr std::size_t kMaxShapes = 4;
  int device = 0;
  std::unique_ptr<cuda::OwnStream> stream;  // warm-up, capture and replay: this trainer's alone
  bool required = false;                    // cuda_graphs: on (a failure is an error, not a line and eager)
  std::vector<ShapeGraph> shapes;
  bool said_too_many_shapes = false;
};

}  // namespace baton::detail
