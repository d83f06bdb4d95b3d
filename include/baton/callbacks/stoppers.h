// Callbacks that end training on a metric: ThresholdStopper (the metric reached a value) and
// EarlyStopper (the metric stopped improving).
//
//   auto stop = std::make_shared<baton::ThresholdStopper>(
//       baton::ThresholdStopperOptions().monitor("eval/accuracy").threshold(0.91));
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "baton/core/callback.h"
#include "baton/core/options.h"
#include "baton/core/time.h"

namespace baton {

// Which way a monitored metric improves: ge (higher is better), le (lower), or auto: le for names
// with "loss" or "error" in them, else ge.
enum class Comparison { kAuto, kGe, kLe };
BATON_ENUM_NAMES(Comparison, {Comparison::kAuto, "auto"}, {Comparison::kGe, "ge"}, {Comparison::kLe, "le"})

class ThresholdStopperOptions {
  BATON_ARG(std::string, monitor) = "eval/accuracy";  // "<evaluator label>/<metric>", or train/loss
  BATON_ARG(double, threshold) = 0.0;
  // ge: stop when the metric >= threshold, le: when <=.
  BATON_ARG(Comparison, comparison) = Comparison::kAuto;
};
// Checks after each evaluation (eval_end of the monitored evaluator), or after each batch for
// train/loss, and asks the trainer to stop: fit() returns after the current batch, with
// summary().stopped_early set.
class ThresholdStopper : public Callback {
 public:
  ~ThresholdStopper() override;
  explicit ThresholdStopper(ThresholdStopperOptions options);
  void eval_end(State& state, Logger& logger) override;
  void batch_end(State& state, Logger& logger) override;
  // The step at which it stopped the run; nullopt before.
  std::optional<int64_t> stopped_at() const;

 private:
  void check(State& state, double value);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class EarlyStopperOptions {
  BATON_ARG(std::string, monitor) = "eval/loss";
  // How long without improvement: evaluations of the monitored evaluator when in ep/ba units,
  // counted in that unit ("3ep": three epochs without improvement).
  BATON_ARG(Time, patience) = Time::from_epoch(1);
  BATON_ARG(double, min_delta) = 0.0;  // a change smaller than this is no improvement
  BATON_ARG(Comparison, comparison) = Comparison::kAuto;
  // When it stops the run, the model's weights go back to those of the best evaluation (Keras's
  // restore_best_weights), so what the run saves last (model.pt, the last checkpoint) is the best
  // model, not the one patience later. A copy of the weights is kept in host memory for it.
  BATON_ARG(bool, restore_best) = true;
};
// Stops when the monitored metric has not improved by min_delta for `patience`.
class EarlyStopper : public Callback {
 public:
  ~EarlyStopper() override;
  explicit EarlyStopper(EarlyStopperOptions options);
  void eval_end(State& state, Logger& logger) override;
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;
  std::optional<double> best() const;
  int64_t best_at() const;  // in patience's unit

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
