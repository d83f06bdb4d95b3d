// Middlewares: engines that wrap one engine and change what passes between a strategy and it.
// They stack (Chain); the trials and listeners live in the innermost engine, so every listener
// sees every event whatever the stack.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "baton/core/options.h"
#include "baton/exec/engine.h"

namespace baton {

class Middleware : public ExecutionEngine {
 public:
  // Once: a second call throws std::logic_error.
  virtual void set_engine(std::shared_ptr<ExecutionEngine> engine);
  ExecutionEngine& engine() const;

  int64_t submit(const nlohmann::json& parameters) override { return engine().submit(parameters); }
  bool wait(const std::vector<int64_t>& ids = {}, std::optional<double> timeout_s = std::nullopt) override {
    return engine().wait(ids, timeout_s);
  }
  std::optional<int64_t> wait_any(std::optional<double> timeout_s = std::nullopt) override {
    return engine().wait_any(timeout_s);
  }
  std::vector<Trial> list(std::optional<TrialStatus> status = std::nullopt) const override {
    return engine().list(status);
  }
  std::optional<Trial> get(int64_t id) const override { return engine().get(id); }
  bool kill(int64_t id) override { return engine().kill(id); }
  int idle_workers() const override { return engine().idle_workers(); }
  bool budget_available() const override { return engine().budget_available(); }
  bool retry(int64_t id) override { return engine().retry(id); }
  int64_t add_unscheduled(const nlohmann::json& parameters) override { return engine().add_unscheduled(parameters); }
  int register_callback(ModelEventType type, ModelEventCallback callback) override {
    return engine().register_callback(type, std::move(callback));
  }
  void unregister_callback(int handle) override { engine().unregister_callback(handle); }
  void dispatch(ModelEvent& event) override { engine().dispatch(event); }
  void shutdown() override { engine().shutdown(); }
  nlohmann::json state_dict() const override { return engine().state_dict(); }
  void load_state_dict(const nlohmann::json& state) override { engine().load_state_dict(state); }

 protected:
  // Called once the engine is set: where a middleware registers its listeners.
  virtual void on_engine_set() {}
  // Adds a trial that never runs (status Invalid, with the reason), through dispatched events.
  int64_t submit_invalid(const nlohmann::json& parameters, const std::string& reason);

 private:
  std::shared_ptr<ExecutionEngine> engine_;
};

// Stacks middlewares: Chain({a, b, c}, engine) = a(b(c(engine))); a sees the strategy's calls first.
class Chain : public Middleware {
 public:
  explicit Chain(std::vector<std::shared_ptr<Middleware>> middlewares);
  void set_engine(std::shared_ptr<ExecutionEngine> engine) override;

 private:
  std::vector<std::shared_ptr<Middleware>> middlewares_;
};

// Submitting parameters that were submitted before: "invalid" adds an Invalid trial, "replay"
// adds a trial that replays the earlier one's metrics and status without running it (once the
// earlier one has completed; before that, it is Invalid with the reason).
enum class DuplicateAction { kInvalid, kReplay };
BATON_ENUM_NAMES(DuplicateAction, {DuplicateAction::kInvalid, "invalid"}, {DuplicateAction::kReplay, "replay"})

class DeduplicationOptions {
  BATON_ARG(DuplicateAction, action) = DuplicateAction::kInvalid;
};

class Deduplication : public Middleware {
 public:
  ~Deduplication() override;
  explicit Deduplication(DeduplicationOptions options = {});
  int64_t submit(const nlohmann::json& parameters) override;

 protected:
  void on_engine_set() override;  // the engine's trials so far (a resumed search) count as seen

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Parameters the predicate rejects become Invalid trials and are not run.
class Filter : public Middleware {
 public:
  explicit Filter(std::function<bool(const nlohmann::json&)> accept, std::string reason = "rejected by the filter");
  int64_t submit(const nlohmann::json& parameters) override;

 private:
  std::function<bool(const nlohmann::json&)> accept_;
  std::string reason_;
};

// A failed trial runs again, up to `retries` times; or, with `failure_metric`, it is reported
// with that final value and counts as Trained.
class FailureHandlerOptions {
  BATON_ARG(int, retries) = 1;                       // at least 0
  BATON_ARG(std::optional<double>, failure_metric);  // Default: none (retries instead)
};

class FailureHandler : public Middleware {
 public:
  ~FailureHandler() override;
  explicit FailureHandler(FailureHandlerOptions options = {});

 protected:
  void on_engine_set() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Kills a running trial whose best intermediate value up to a step is worse than the median of
// the completed trials' best values up to the same step, once `warmup_trials` have completed and
// the trial reached `warmup_steps`.
class MedianStopOptions {
  BATON_ARG(bool, maximize) = true;  // the trials' values: higher is better
  BATON_ARG(int, warmup_trials) = 5;
  BATON_ARG(int64_t, warmup_steps) = 0;
};

class MedianStop : public Middleware {
 public:
  ~MedianStop() override;
  explicit MedianStop(MedianStopOptions options = {});
  int64_t kills() const;

 protected:
  void on_engine_set() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Asynchronous successive halving (ASHA, Li et al. 2020; Optuna's SuccessiveHalvingPruner): rungs
// at steps min_step * eta^k. The first value a trial reports at or past a rung is its value there;
// unless it is in the best 1/eta of all values recorded at that rung so far (itself included), the
// trial is killed. No trial waits for others: the decision uses whoever got there first.
//
// With `brackets` > 1 it is asynchronous Hyperband (Li et al. 2018; Optuna's HyperbandPruner):
// trials take brackets in turn (trial id modulo brackets), bracket b halves from step
// min_step * eta^b with rungs of its own, so that later brackets give every trial a longer start
// (hedging against metrics that rank trials badly early).
class AshaOptions {
  BATON_ARG(bool, maximize) = true;      // the trials' values: higher is better
  BATON_ARG(int64_t, min_step) = 1;      // the first rung; at least 1
  BATON_ARG(int, reduction_factor) = 3;  // eta: rungs eta times apart, the best 1/eta go on; at least 2
  BATON_ARG(int, brackets) = 1;          // Hyperband's brackets; 1: plain ASHA
};

class Asha : public Middleware {
 public:
  ~Asha() override;
  // Throws std::invalid_argument for min_step < 1, reduction_factor < 2 or brackets < 1.
  explicit Asha(AshaOptions options = {});
  int64_t kills() const;

 protected:
  void on_engine_set() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class BudgetOptions {
  BATON_ARG(std::optional<int64_t>, max_trials);        // trials submitted
  BATON_ARG(std::optional<double>, max_wall_s);         // since the middleware was set on its engine
  BATON_ARG(std::optional<double>, max_trial_seconds);  // summed run time of the trials
};

// budget_available() is false once any limit is spent; submit() then throws std::runtime_error.
class Budget : public Middleware {
 public:
  ~Budget() override;
  explicit Budget(BudgetOptions options);
  int64_t submit(const nlohmann::json& parameters) override;
  bool budget_available() const override;

 protected:
  void on_engine_set() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
