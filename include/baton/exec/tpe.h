// Tree-structured Parzen Estimator (Bergstra et al. 2011, as in Optuna and NNI), with a
// suggestion cost that stays flat as trials grow: the "good" set is at most 25 trials and the
// "rest" is represented by at most `max_rest` of them, spread evenly over its sorted values.
// The inner parameters of a nested choice are modelled by a TPE of their own, over the trials that
// took that choice.
#pragma once

#include <map>
#include <memory>
#include <random>

#include "baton/exec/space.h"

namespace baton {

struct TpeOptions {
  uint64_t seed = 0;
  bool maximize = true;
  int startup_trials = 10;  // random suggestions before the model is used
  int candidates = 24;      // drawn from the good density, the best ratio wins
  bool multivariate = false;  // one kernel per trial over all dimensions (else per dimension, as Optuna's default)
  int max_rest = 16;          // hartmann6, 1,000 trials, 10 seeds: 16, 32 and 64 find the same median best
};

class TpeStrategy : public Strategy {
 public:
  TpeStrategy(SearchSpace space, TpeOptions options);
  std::string name() const override { return "tpe"; }
  std::optional<nlohmann::json> suggest() override;
  void observe(const Trial& trial) override;
  std::size_t observations() const { return sorted_.size(); }

 private:
  struct Obs {
    double loss;                // lower is better (the value, negated when maximizing)
    std::vector<double> x;      // per dimension: internal coordinate, or the choice's index
  };
  // A nested choice's inner dimensions: a TPE of their own over the trials that took that choice
  // (NNI's and Hyperopt's tree-structured treatment), created when first needed.
  TpeStrategy& branch(std::size_t dimension, std::size_t choice);
  SearchSpace space_;
  TpeOptions options_;
  std::map<std::pair<std::size_t, std::size_t>, std::unique_ptr<TpeStrategy>> branches_;
  std::mt19937_64 rng_;
  std::vector<Obs> sorted_;  // by loss
  int64_t suggested_ = 0;
};

}  // namespace baton
