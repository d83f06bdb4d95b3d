// Engine: runs algorithms and callbacks on each event, in a defined order, and records traces.
//
//   baton::State state;
//   baton::Logger logger(state);
//   baton::Engine engine(state, logger);
//   engine.run_event(baton::Event::kInit);
//   baton::Traces traces = engine.run_event(baton::Event::kBeforeLoss);
//   engine.close();
//
// Order on each event:
//   INIT: loggers, then other callbacks, then algorithms.
//   any other event: algorithms (matched, then ordered by the passes), then callbacks that are
//   not loggers, then loggers. Callbacks run in State::callbacks order.
// BATON_ENGINE_DEBUG=1 in the environment logs every hook with [ep=][ba=][event=].
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "baton/core/event.h"
#include "baton/core/passes.h"
#include "baton/core/trace.h"

namespace baton {

class Algorithm;
class Callback;
class Logger;
class State;

class Engine {
 public:
  // The default passes, then `extra_passes`.
  Engine(State& state, Logger& logger, std::vector<AlgorithmPass> extra_passes = {});
  // Closes the engine if close() was not called.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Runs the event. Returns the traces of the algorithms that ran, in run order.
  // REQUIRES: not closed (throws std::logic_error). On INIT, throws std::logic_error if a
  // callback is still open in another engine.
  Traces run_event(Event event);

  // Inserts a pass at `index` (0 runs before the defaults); -1 appends.
  // Throws std::out_of_range for an index past the end.
  void register_pass(AlgorithmPass pass, int index = -1);
  const std::vector<AlgorithmPass>& passes() const;

  // close() on every callback, then post_close() on those whose close() did not throw.
  // Errors are logged, never thrown. Idempotent.
  void close();
  bool closed() const;

 private:
  void refresh_algorithms();
  void refresh_callbacks();
  Traces run_algorithms(Event event);
  void run_callbacks(Event event, bool loggers_first);
  void claim_callbacks();
  void release_callbacks();
  void debug_log(Event event, const std::string& what) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
