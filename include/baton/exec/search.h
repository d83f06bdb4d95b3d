// The search loop: a strategy's suggestions run on an execution engine until the trials are done.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "baton/exec/engine.h"
#include "baton/exec/pareto.h"
#include "baton/exec/strategy.h"

namespace baton {

struct SearchProgress {
  int64_t submitted = 0;
  int64_t completed = 0;
  std::optional<Trial> best{};  // by the first objective, among feasible trials
  std::optional<Trial> last{};  // the trial that just completed
  std::vector<Trial> front{};   // several objectives: the Pareto front, renewed as feasible trials end
  std::string stage{};          // where a search of stages is (population-based training's interval)
};

// Whether `t` would be a search's new best: Trained, feasible, and ahead of `best` (nullopt: none
// yet) in the first objective.
bool beats(const Trial& t, const std::optional<Trial>& best, const Objectives& objectives);
// A search's best trial by that rule (the first of equals); nullopt when none is.
std::optional<Trial> best_trial(const std::vector<Trial>& trials, const Objectives& objectives);

// The strategy loop: submits while a worker is idle and the budget lasts, until `trials` were
// submitted (counting those already in the engine, e.g. after a resume), and feeds each completed
// trial back to the strategy. Event-driven: it sleeps in wait_any between completions.
// `on_progress` runs after every completion. Returns the best Trained trial.
std::optional<Trial> run_search(Strategy& strategy, ExecutionEngine& engine, int64_t trials, bool maximize,
                                const std::function<void(const SearchProgress&)>& on_progress = {});
// The same with several objectives or constraints: the best is the first objective's among the
// feasible trials.
std::optional<Trial> run_search(Strategy& strategy, ExecutionEngine& engine, int64_t trials,
                                const Objectives& objectives,
                                const std::function<void(const SearchProgress&)>& on_progress = {});

}  // namespace baton
