#include "baton/exec/search.h"

#include <thread>

namespace baton {

bool beats(const Trial& t, const std::optional<Trial>& best, const Objectives& objectives) {
  if (t.status != TrialStatus::kTrained || !t.metrics.final) return false;
  if (objectives.usable(t) ? objectives.violation(t) > 0 : !objectives.constraints.empty()) return false;
  if (!best) return true;
  return objectives.maximize.front() ? *t.metrics.final > *best->metrics.final
                                     : *t.metrics.final < *best->metrics.final;
}

std::optional<Trial> best_trial(const std::vector<Trial>& trials, const Objectives& objectives) {
  std::optional<Trial> best;
  for (const auto& t : trials) {
    if (beats(t, best, objectives)) best = t;
  }
  return best;
}

std::optional<Trial> run_search(Strategy& strategy, ExecutionEngine& engine, int64_t trials, bool maximize,
                                const std::function<void(const SearchProgress&)>& on_progress) {
  return run_search(strategy, engine, trials, Objectives{{maximize}, {}}, on_progress);
}

std::optional<Trial> run_search(Strategy& strategy, ExecutionEngine& engine, int64_t trials,
                                const Objectives& objectives,
                                const std::function<void(const SearchProgress&)>& on_progress) {
  SearchProgress progress;
  auto better = [&](const Trial& t) { return beats(t, progress.best, objectives); };
  const auto restored = engine.list();  // an earlier run's trials, on resume
  strategy.restore(restored);
  for (const auto& t : restored) {
    ++progress.submitted;
    if (t.completed()) {
      ++progress.completed;
      if (better(t)) progress.best = t;
    }
  }
  if (objectives.size() > 1) progress.front = pareto_front(restored, objectives);
  auto take = [&](int64_t id) {
    auto t = engine.get(id);
    if (!t) return;
    ++progress.completed;
    strategy.observe(*t);
    if (better(*t)) progress.best = *t;
    progress.last = *t;
    if (objectives.size() > 1 && objectives.usable(*t)) progress.front = pareto_front(engine.list(), objectives);
    if (on_progress) on_progress(progress);
  };
  bool exhausted = false;
  for (;;) {
    while (!exhausted && progress.submitted < trials && engine.idle_workers() > 0 && engine.budget_available()) {
      auto parameters = strategy.suggest();
      if (!parameters) {
        exhausted = true;
        break;
      }
      try {
        engine.submit(*parameters);
      } catch (const BudgetExhausted&) {  // a shared search's other workers used the last trials
        exhausted = true;
        break;
      }
      ++progress.submitted;
      // An engine that ran it already (in-process, sequential): the strategy learns before the next.
      while (auto done = engine.wait_any(0.0)) take(*done);
    }
    auto id = engine.wait_any();
    if (!id) {
      const bool can_submit = !exhausted && progress.submitted < trials && engine.budget_available();
      if (!can_submit) break;
      std::this_thread::yield();  // a worker is between its trial's end and being idle again
      continue;
    }
    take(*id);
  }
  return progress.best;
}

}  // namespace baton
