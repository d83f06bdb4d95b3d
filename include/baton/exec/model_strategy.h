// What the model-based strategies (TPE, GP) share: a Latin hypercube for the start-up suggestions,
// the observations sorted by loss in internal coordinates (see src/exec/coordinates.h), the
// running trials (suggested, not yet observed: a model counts them so that parallel workers do
// not all go to the same place), a strategy of the same kind per nested choice (over the trials
// that took it, Hyperopt's tree-structured treatment), and a resume that gives the same next
// suggestions as a search that never stopped.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "baton/exec/pareto.h"
#include "baton/exec/strategy.h"

namespace baton {

namespace coordinates {
class LatinHypercube;
}

class ModelStrategy : public Strategy {
 public:
  ~ModelStrategy() override;
  // "tpe: the first 10 trials are spread over the space at random (a Latin hypercube;
  // startup_trials), then its model chooses".
  std::string plan() const override;
  std::optional<nlohmann::json> suggest() override;
  void observe(const Trial& trial) override;
  void restore(const std::vector<Trial>& trials) override;
  std::size_t observations() const;

 protected:
  struct Observation {
    double loss;                    // lower is better (the first objective's value, negated when maximizing)
    int64_t order;                  // when it was observed
    std::vector<double> x;          // per dimension: the coordinate, or the choice's index
    std::vector<double> losses{};   // every objective's (losses[0] == loss)
    double violation = 0;           // of the search's constraints (0: feasible)
    std::vector<double> margins{};  // each constraint's value less its bound (>=: the reverse); <= 0 keeps it
  };
  // The observations are sorted feasible first by loss, then infeasible by violation.
  ModelStrategy(SearchSpace space, uint64_t seed, Objectives objectives, int startup_trials);
  const Objectives& objectives() const;
  // The model's next point in coordinates (snapped to values of the space), from the observations
  // sorted by loss and the points of the running trials.
  virtual std::vector<double> model_point(const std::vector<Observation>& sorted,
                                          const std::vector<std::vector<double>>& running) = 0;
  // A strategy of the same kind, options and direction over a nested choice's dimensions.
  virtual std::unique_ptr<ModelStrategy> nested(SearchSpace space, uint64_t seed) const = 0;
  const SearchSpace& space() const;
  std::mt19937_64& rng();

 private:
  ModelStrategy& branch(std::size_t dimension, std::size_t choice);
  nlohmann::json parameters_at(const std::vector<double>& x);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
