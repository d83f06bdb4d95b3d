// Gaussian-process Bayesian optimisation (as Optuna's GPSampler and BoTorch do it): a GP with a
// Matérn-5/2 kernel, one length scale per dimension (ARD), its hyper-parameters fitted by the
// marginal likelihood with weak priors (L-BFGS, warm-started from the last fit); the log of the
// expected improvement maximised over many random points and the neighbourhoods of the best trials,
// then refined by a local step from the best of them and from the best trial. The model itself is
// in src/exec/gp_model.h. Numeric dimensions are scaled to [0, 1] (log types in log space);
// integers and quantized values are rounded after the step; a choice is a categorical dimension
// (the distance is 0 or 1, with a length scale of its own). A configuration already tried or
// running (to 0.01% of each range) is not suggested again, nor a face of the box the last two trials
// sat on (the suggestion moves inside: the model has seen nothing there). Running trials are counted by the
// kriging believer (their predicted value, so the next suggestion goes elsewhere). Plain C++: at
// 100 trials a suggestion takes a few milliseconds.
#pragma once

#include "baton/core/options.h"
#include "baton/exec/model_strategy.h"

namespace baton {

class GpOptions {
  BATON_ARG(uint64_t, seed) = 0;
  BATON_ARG(bool, maximize) = true;
  // Constraints: a GP of each one's margin; the acquisition is the log EI over the best feasible
  // trial plus the log probability of keeping each (Gardner et al. 2014, as Optuna's GPSampler).
  BATON_ARG(std::vector<Constraint>, constraints);
  BATON_ARG(int, startup_trials) = 6;     // suggestions before the model is used (a Latin hypercube over the space)
  BATON_ARG(int, candidates) = 1024;      // random points the acquisition is evaluated at
  BATON_ARG(int, local_starts) = 5;       // the best candidates refined by a local step
  BATON_ARG(bool, constant_liar) = true;  // running trials count with their predicted value (kriging believer)
};

class GpStrategy : public ModelStrategy {
 public:
  ~GpStrategy() override;
  GpStrategy(SearchSpace space, GpOptions options);
  std::string name() const override { return "gp"; }

 protected:
  std::vector<double> model_point(const std::vector<Observation>& sorted,
                                  const std::vector<std::vector<double>>& running) override;
  std::unique_ptr<ModelStrategy> nested(SearchSpace space, uint64_t seed) const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
