// The train step from CUDA graphs (TrainerOptions::cuda_graphs). Per batch shape: a few eager
// steps on a side stream (lazy initialisation, cuDNN's choices), then one capture of forward, loss,
// backward and the optimizer step (CapturableStep: the learning rate and momentum read from device
// scalars), replayed for every later batch of that shape with the batch copied into the graph's
// input. The events inside the step fire after each replay, in order, with the graph's outputs,
// loss and gradients in the state.
#include <optional>
#include <stdexcept>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "baton/train/trainer.h"
#include "train/trainer_graphs.h"
#include "train/trainer_impl.h"
#include "train/trainer_internal.h"

namespace baton {
namespace {

using detail::ShapeGraph;
using detail::TrainGraphs;

// What a graph is specific to: the batch's shapes and element types.
std::vector<int64_t> shape_key(const Batch& batch) {
  std::vector<int64_t> key;
  for (const at::Tensor* t : {&batch.input, &batch.target}) {
    key.push_back(static_cast<int64_t>(t->scalar_type()));
    key.push_back(t->dim());
    for (int64_t d : t->sizes()) key.push_back(d);
  }
  return key;
}

// The parameters' storage and whether they train: a graph replays only while both are as captured
// (an algorithm may freeze layers, or swap weights in for evaluation and back).
std::pair<std::vector<const void*>, std::vector<bool>> weights_of(torch::nn::Module& model) {
  std::pair<std::vector<const void*>, std::vector<bool>> out;
  for (const auto& p : model.parameters()) {
    out.first.push_back(p.data_ptr());
    out.second.push_back(p.requires_grad());
  }
  return out;
}

}  // namespace

// Why this run cannot train from graphs (every reason, "; "-separated), or "" when it can.
std::string Trainer::Impl::graph_blockers() {
  std::vector<std::string> why;
  if (ddp_) why.push_back("data parallelism reduces the gradients through the host");
  if (state_.grad_scaler) why.push_back("amp_fp16's loss scaling checks the gradients on the host");
  if (state_.profiler) why.push_back("the profiler times each phase of the step");
  if (!options_.activation_checkpointing().empty()) {
    why.push_back("activation_checkpointing sets the random generator's state in backward");
  }
  for (const auto& a : state_.algorithms) {
    const std::string reason = a->graph_blocker(state_);
    if (!reason.empty()) why.push_back(a->name() + " " + reason);
    if (a->backwards_create_graph()) why.push_back(a->name() + " needs higher-order gradients");
  }
  for (const auto& c : state_.callbacks) {
    const std::string reason = c->graph_blocker();
    if (!reason.empty()) why.push_back(c->name() + " " + reason);
  }
  std::string out;
  for (const auto& w : why) out += (out.empty() ? "" : "; ") + w;
  return out;
}

// At fit start: graphs when the options, the device and every algorithm and callback allow them.
void Trainer::Impl::setup_graphs() {
  graphs_.reset();
  const CudaGraphs mode = options_.cuda_graphs();
  if (mode == CudaGraphs::kOff || !state_.device.is_cuda()) return;
  const std::string why = graph_blockers();
  if (!why.empty()) {
    if (mode == CudaGraphs::kOn) {
      throw std::invalid_argument("cuda_graphs on: the train step cannot be captured: " + why +
                                  " (set cuda_graphs: auto to train eager instead)");
    }
    spdlog::info("cuda_graphs: training eager: {}", why);
    return;
  }
  graphs_ = std::make_unique<TrainGraphs>();
  graphs_->device = state_.device.index();  // NOLINT(bugprone-signed-char-misuse): an index, not a character
  graphs_->stream = std::make_unique<cuda::OwnStream>(graphs_->device);
  graphs_->required = mode == CudaGraphs::kOn;
}

// Graphs given up on for this fit (auto), or an error (on).
namespace {
void give_up(std::unique_ptr<TrainGraphs>& graphs, const std::string& why) {
  if (graphs->required) throw std::runtime_error("cuda_graphs on: " + why);
  spdlog::warn("cuda_graphs: training eager from here: {}", why);
  graphs.reset();
}
}  // namespace

bool Trainer::Impl::graph_step() {
  TrainGraphs& g = *graphs_;
  if (state_.batch.size() > microbatch_size()) {
    give_up(graphs_, "device_train_microbatch_size splits the batch into microbatches");
    return false;
  }
  const std::vector<int64_t> key = shape_key(state_.batch);
  ShapeGraph* shape = nullptr;
  for (auto& s : g.shapes) {
    if (s.key == key) shape = &s;
  }
  if (shape == nullptr) {
    if (g.shapes.size() >= TrainGraphs::kMaxShapes) {
      if (!g.said_too_many_shapes) {
        spdlog::info("cuda_graphs: batches of more than {} shapes; those of a new shape train eager",
                     TrainGraphs::kMaxShapes);
        g.said_too_many_shapes = true;
      }
      return false;
    }
    g.shapes.push_back(ShapeGraph{});
    shape = &g.shapes.back();
    shape->key = key;
  }
  Model& model = current_model();
  if (shape->graph && weights_of(model) != std::make_pair(shape->weights, shape->trained)) {
    spdlog::info("cuda_graphs: the parameters changed (frozen, replaced); capturing again");
    *shape = ShapeGraph();
    shape->key = key;
  }
  cuda::SideStream side(*g.stream);
  if (!shape->graph && shape->eager_steps < TrainGraphs::kWarmupSteps) {
    ++shape->eager_steps;
    eager_step();
    return true;
  }
  if (!shape->graph) {
    try {
      capture(*shape, model);
    } catch (const std::exception& e) {
      capturing_ = false;
      give_up(graphs_, detail::first_line(e.what()));
      eager_step();
      return true;
    }
  }
  replay(*shape, model);
  return true;
}

// While graphs are on, every step takes the replays' arithmetic: the warm-up steps before a capture
// (again after a resume), and the eager steps of a shape not captured. A run trained from graphs
// then ends bitwise the same however it was interrupted and resumed (LibTorch's eager steps round
// differently: an fma where the capturable step multiplies by a device scalar). Only an optimizer
// with no state yet (the run's first step: momentum buffers, moments to make) takes LibTorch's step.
bool Trainer::Impl::capturable_step(const std::shared_ptr<torch::optim::Optimizer>& optimizer) {
  std::optional<CapturableStep> step;
  try {
    step.emplace(optimizer);
  } catch (const std::invalid_argument&) {
    return false;
  }
  step->prepare();
  step->run();
  return true;
}

// Records the step into shape.graph; the state's batch becomes the graph's input.
void Trainer::Impl::capture(ShapeGraph& shape, Model& model) {
  shape.steps.clear();
  for (const auto& optimizer : state_.optimizers) shape.steps.push_back(std::make_unique<CapturableStep>(optimizer));
  shape.input = {state_.batch.input.clone(), state_.batch.target.clone()};
  // Gradients made during the capture live in the graph's memory: each replay writes them there.
  for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();
  shape.graph = std::make_unique<cuda::Graph>();
  capturing_ = true;
  shape.graph->capture([&] {
    state_.batch = shape.input;
    train_microbatch(model, Backward{});
    for (const auto& step : shape.steps) step->run();
  });
  capturing_ = false;
  shape.outputs = state_.outputs;
  shape.loss = state_.loss;
  shape.grads.clear();
  for (const auto& p : model.parameters()) shape.grads.push_back(p.grad());
  std::tie(shape.weights, shape.trained) = weights_of(model);
}

// One step from the graph, then the events inside the step with its outputs, loss and gradients.
void Trainer::Impl::replay(ShapeGraph& shape, Model& model) {
  const Batch batch = state_.batch;
  shape.input.input.copy_(batch.input, /*non_blocking=*/true);
  shape.input.target.copy_(batch.target, /*non_blocking=*/true);
  for (const auto& step : shape.steps) step->prepare();
  shape.graph->replay();
  ++summary_.graph_steps;
  state_.num_microbatches = 1;
  state_.microbatch_size = batch.size();
  state_.outputs = shape.outputs;
  state_.loss = shape.loss;
  std::size_t i = 0;
  for (auto& p : model.parameters()) p.mutable_grad() = shape.grads[i++];
  for (Event e : {Event::kBeforeForward, Event::kAfterForward, Event::kBeforeLoss, Event::kAfterLoss,
                  Event::kBeforeBackward, Event::kAfterBackward}) {
    engine_->run_event(e);
  }
  // A copy: the graph's loss is rewritten by the next replay.
  push_loss(shape.loss.detach().to(at::kDouble, /*non_blocking=*/false, /*copy=*/true));
  engine_->run_event(Event::kAfterTrainBatch);
}

}  // namespace baton
