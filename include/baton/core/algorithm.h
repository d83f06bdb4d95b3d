// Algorithm: a training method that the engine runs on the events it matches.
//
//   class ScaleLoss : public baton::Algorithm {
//    public:
//     bool match(baton::Event e, const baton::State&) override { return e == baton::Event::kAfterLoss; }
//     std::optional<int> apply(baton::Event, baton::State& s, baton::Logger&) override {
//       s.loss = s.loss * 0.5;
//       return std::nullopt;
//     }
//   };
#pragma once

#include <optional>
#include <string>
#include <typeinfo>

#include "baton/core/event.h"
#include "baton/core/sharding.h"
#include "baton/core/state_dict.h"

namespace baton {

class State;
class Logger;

class Algorithm {
 public:
  virtual ~Algorithm() = default;

  // The class name without namespaces ("LabelSmoothing"). Trace keys and passes use it.
  virtual std::string name() const;

  // Whether apply() should run on this event. Must not change the state.
  virtual bool match(Event event, const State& state) = 0;
  // Changes the state in place. The return value is recorded in the trace as its exit code.
  virtual std::optional<int> apply(Event event, State& state, Logger& logger) = 0;

  // Data-parallel training must look for parameters that get no gradient. Default: false.
  virtual bool find_unused_parameters() const { return false; }
  // backward() must keep the graph for higher-order gradients. Default: false.
  virtual bool backwards_create_graph() const { return false; }
  // The algorithm changes the model's structure and must run again before a checkpoint loads.
  // Default: false.
  virtual bool required_on_load() const { return false; }
  // The algorithm mixes two losses (MixUp, CutMix); the engine warns when two of them run on
  // one event. Default: false.
  virtual bool interpolate_loss() const { return false; }

  // Why this algorithm cannot train under `sharding` (TrainerOptions::sharding), or "" when it can:
  // "needs whole parameters" (EMA under full sharding), "needs whole gradients" (SAM). The trainer
  // refuses the run before it trains ("sharding: full: algorithm 'Ema' needs whole parameters").
  // Default: "" (works at every level).
  virtual std::string sharding_blocker(Sharding /*sharding*/) const { return ""; }
  // Why the train step cannot be replayed from a CUDA graph while this algorithm runs
  // (TrainerOptions::cuda_graphs), or "" when it can. The graph holds forward, loss, backward and
  // the optimizer step as captured once, so an algorithm that acts on an event inside the step
  // (before_forward ... after_train_batch) would act only at the capture. Acting outside it
  // (after_dataloader, batch_end, eval, init) is fine; so are new batch shapes (a graph each) and
  // parameters that stop training (the trainer captures again). Default: the events inside the
  // step that match() accepts on `state`, named ("acts on before_loss, inside the train step").
  virtual std::string graph_blocker(const State& state);

  virtual StateDict state_dict() const { return {}; }
  virtual void load_state_dict(const StateDict& /*state*/) {}

  // How a recipe builds it: {"name": "blurpool", "options": {...}}. make_algorithm (baton/algorithms)
  // sets it; empty for an algorithm built directly in C++. Checkpoints keep it for the algorithms
  // that are required_on_load, so a run without them can rebuild them.
  const nlohmann::json& recipe_spec() const { return recipe_spec_; }
  void set_recipe_spec(nlohmann::json spec) { recipe_spec_ = std::move(spec); }

 private:
  nlohmann::json recipe_spec_;
};

// The unqualified class name of a polymorphic object: "baton::algorithms::MixUp" -> "MixUp".
std::string short_type_name(const std::type_info& type);

}  // namespace baton
