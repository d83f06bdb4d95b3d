// Callback: code that watches a run (monitors, checkpoints, loggers) and plugs into the engine.
//
// Override the events you need; each has a no-op default and the name of its event string.
//
//   class CountBatches : public baton::Callback {
//    public:
//     void batch_end(baton::State&, baton::Logger&) override { ++batches; }
//     int batches = 0;
//   };
#pragma once

#include <atomic>
#include <string>

#include "baton/core/event.h"
#include "baton/core/sharding.h"
#include "baton/core/state_dict.h"

namespace baton {

class State;
class Logger;
class Engine;

class Callback {
 public:
  Callback() = default;
  // Copies are new callbacks: they are not open in the engine that opened the original.
  Callback(const Callback& /*other*/) {}
  Callback& operator=(const Callback& /*other*/) { return *this; }
  virtual ~Callback() = default;

  // The class name without namespaces ("SpeedMonitor").
  virtual std::string name() const;

  // Why the train step cannot be replayed from a CUDA graph while this callback runs, or "" when
  // it can (TrainerOptions::cuda_graphs). Under a graph the events inside the step (before_forward
  // ... after_train_batch) still fire every batch, in order, after the step has run on the device:
  // a callback that reads the state there (outputs, loss, gradients) sees this batch's; one that
  // changes it there (scales the loss, clips gradients) must return why. Default: "".
  virtual std::string graph_blocker() const { return {}; }
  // Why this callback cannot run under `sharding` (TrainerOptions::sharding), or "" when it can
  // ("reads whole gradients"). Default: "".
  virtual std::string sharding_blocker(Sharding /*sharding*/) const { return {}; }

  // Calls the method named after the event. Override to see every event in one place.
  virtual void run_event(Event event, State& state, Logger& logger);

  virtual void init(State& /*state*/, Logger& /*logger*/) {}
  virtual void before_load(State& /*state*/, Logger& /*logger*/) {}
  virtual void after_load(State& /*state*/, Logger& /*logger*/) {}
  virtual void fit_start(State& /*state*/, Logger& /*logger*/) {}
  virtual void iteration_start(State& /*state*/, Logger& /*logger*/) {}
  virtual void epoch_start(State& /*state*/, Logger& /*logger*/) {}
  virtual void before_dataloader(State& /*state*/, Logger& /*logger*/) {}
  virtual void after_dataloader(State& /*state*/, Logger& /*logger*/) {}
  virtual void batch_start(State& /*state*/, Logger& /*logger*/) {}
  virtual void before_train_batch(State& /*state*/, Logger& /*logger*/) {}
  virtual void before_forward(State& /*state*/, Logger& /*logger*/) {}
  virtual void after_forward(State& /*state*/, Logger& /*logger*/) {}
  virtual void before_loss(State& /*state*/, Logger& /*logger*/) {}
  virtual void after_loss(State& /*state*/, Logger& /*logger*/) {}
  virtual void before_backward(State& /*state*/, Logger& /*logger*/) {}
  virtual void after_backward(State& /*state*/, Logger& /*logger*/) {}
  virtual void after_train_batch(State& /*state*/, Logger& /*logger*/) {}
  virtual void batch_end(State& /*state*/, Logger& /*logger*/) {}
  virtual void batch_checkpoint(State& /*state*/, Logger& /*logger*/) {}
  virtual void epoch_end(State& /*state*/, Logger& /*logger*/) {}
  virtual void epoch_checkpoint(State& /*state*/, Logger& /*logger*/) {}
  virtual void iteration_end(State& /*state*/, Logger& /*logger*/) {}
  virtual void iteration_checkpoint(State& /*state*/, Logger& /*logger*/) {}
  virtual void fit_end(State& /*state*/, Logger& /*logger*/) {}
  virtual void eval_before_all(State& /*state*/, Logger& /*logger*/) {}
  virtual void eval_start(State& /*state*/, Logger& /*logger*/) {}
  virtual void eval_batch_start(State& /*state*/, Logger& /*logger*/) {}
  virtual void eval_before_forward(State& /*state*/, Logger& /*logger*/) {}
  virtual void eval_after_forward(State& /*state*/, Logger& /*logger*/) {}
  virtual void eval_batch_end(State& /*state*/, Logger& /*logger*/) {}
  virtual void eval_end(State& /*state*/, Logger& /*logger*/) {}
  virtual void eval_after_all(State& /*state*/, Logger& /*logger*/) {}
  virtual void eval_standalone_start(State& /*state*/, Logger& /*logger*/) {}
  virtual void eval_standalone_end(State& /*state*/, Logger& /*logger*/) {}
  virtual void predict_start(State& /*state*/, Logger& /*logger*/) {}
  virtual void predict_batch_start(State& /*state*/, Logger& /*logger*/) {}
  virtual void predict_before_forward(State& /*state*/, Logger& /*logger*/) {}
  virtual void predict_after_forward(State& /*state*/, Logger& /*logger*/) {}
  virtual void predict_batch_end(State& /*state*/, Logger& /*logger*/) {}
  virtual void predict_end(State& /*state*/, Logger& /*logger*/) {}

  // Called once by Engine::close(), even when another callback's close() threw.
  virtual void close(State& /*state*/, Logger& /*logger*/) {}
  // Called after every callback's close(), only if this callback's close() succeeded.
  virtual void post_close() {}

  virtual StateDict state_dict() const { return {}; }
  virtual void load_state_dict(const StateDict& /*state*/) {}

  // True for LoggerDestinations; the engine orders loggers apart from other callbacks.
  virtual bool is_logger_destination() const { return false; }

 private:
  friend class Engine;
  // The engine this callback is open in (from INIT until close()), or nullptr.
  std::atomic<const Engine*> open_in_{nullptr};
};

}  // namespace baton
