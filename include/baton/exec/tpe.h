// Tree-structured Parzen Estimator (Bergstra et al. 2011; Watanabe 2023, "Tree-structured Parzen
// estimator: understanding its algorithm components"), built as Optuna's TPESampler builds it:
// Gaussian kernels truncated to the range with the neighbour-gap bandwidth and the magic clip, a
// prior kernel, the best gamma(n) = min(ceil(0.1 n), 25) trials as the good set and the rest
// weighted by age (older ones count less). What baton adds (see ModelStrategy): the start-up
// trials fill the space evenly (a Latin hypercube instead of independent draws), and running
// trials count as bad ones (a constant liar) so that parallel workers spread out.
#pragma once

#include "baton/exec/model_strategy.h"

namespace baton {

struct TpeOptions {
  uint64_t seed = 0;
  bool maximize = true;
  int startup_trials = 10;    // suggestions before the model is used (a Latin hypercube over the space)
  int candidates = 128;       // drawn from the good density; the best ratio good/rest wins (Optuna: 24)
  bool multivariate = true;   // one kernel per trial over all dimensions (Optuna 5's default); else per dimension
  double prior_weight = 1.0;  // the weight of the flat prior kernel beside each trial's 1
  int max_rest = 200;         // the rest: at most its newest `max_rest` trials (older ones weigh ~0 anyway)
  bool constant_liar = true;  // running trials count as bad ones
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
  TpeOptions options_;
};

}  // namespace baton
