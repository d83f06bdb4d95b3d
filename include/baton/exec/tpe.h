// Tree-structured Parzen Estimator (Bergstra et al. 2011; Watanabe 2023, "Tree-structured Parzen
// estimator: understanding its algorithm components"), built as Optuna's TPESampler builds it:
// Gaussian kernels truncated to the range with the neighbour-gap bandwidth and the magic clip, a
// prior kernel, the best min(ceil(gamma n), 25) trials as the good set and the rest weighted by
// age (older ones count less). Where baton departs from Optuna's defaults, after measuring
// (bench/README.md, held-out seeds too): the good trials weighted by their improvement (Watanabe's
// EI weighting), kernels allowed narrower as trials accumulate (clip exponent 1.5 instead of 1)
// but never below one step of an integer or quantized parameter nor below a floor that grows with
// the number of dimensions (24 candidates, as Optuna); the start-up trials fill the space evenly (a
// Latin hypercube instead of independent draws), and running trials count as bad ones (a constant
// liar) so that parallel workers spread out.
#pragma once

#include "baton/core/options.h"
#include "baton/exec/model_strategy.h"

namespace baton {

class TpeOptions {
  BATON_ARG(uint64_t, seed) = 0;
  BATON_ARG(bool, maximize) = true;
  // Several objectives (MOTPE, as Optuna's TPESampler with several directions): each one's
  // maximize; empty: one objective, `maximize`. The good set is then the first non-dominated fronts
  // (the last one cut by hypervolume), its trials weighted by their hypervolume contribution.
  BATON_ARG(std::vector<bool>, directions);
  // Constraints: infeasible trials are never good while feasible ones are (Optuna's constraints_func).
  BATON_ARG(std::vector<Constraint>, constraints);
  BATON_ARG(int, startup_trials) = 10;  // suggestions before the model is used (a Latin hypercube over the space)
  BATON_ARG(int, candidates) = 24;      // drawn from the good density; the best ratio good/rest wins (as Optuna)
  BATON_ARG(bool,
            multivariate) = true;  // one kernel per trial over all dimensions (Optuna 5's default); else per dimension
  BATON_ARG(double, prior_weight) = 1.0;  // the weight of the flat prior kernel beside each trial's 1
  BATON_ARG(int, max_rest) = 200;         // the rest: at most its newest `max_rest` trials (older ones weigh ~0 anyway)
  BATON_ARG(bool, constant_liar) = true;  // running trials count as bad ones
  BATON_ARG(double, gamma) = 0.1;         // the good set: the best ceil(gamma * n) trials, at most 25
  BATON_ARG(bool, ei_weights) = true;     // good trials weigh their improvement over the rest's best; else 1 each
  BATON_ARG(double, clip_exponent) = 1.5;    // the narrowest kernel: range * max(floor, (n + 2)^-clip_exponent)
  BATON_ARG(double, min_bandwidth) = 0.005;  // floor: min_bandwidth * min(dimensions, 10) (Optuna: 0.01)
};

class TpeStrategy : public ModelStrategy {
 public:
  TpeStrategy(SearchSpace space, TpeOptions options);
  std::string name() const override { return "tpe"; }

 protected:
  std::vector<double> model_point(const std::vector<Observation>& sorted,
                                  const std::vector<std::vector<double>>& running) override;
  std::unique_ptr<ModelStrategy> nested(SearchSpace space, uint64_t seed) const override;

 private:
  struct Good {
    std::vector<std::size_t> members;  // indices into the sorted observations
    std::vector<double> weights;
    double prior_weight;
  };
  Good good_set(const std::vector<Observation>& sorted) const;
  Good good_of_several(const std::vector<Observation>& sorted, std::size_t n_good) const;
  TpeOptions options_;
};

}  // namespace baton
