// NSGA-II (Deb et al. 2002), as Optuna's NSGAIISampler runs it, for one or several objectives and
// constraints (constraint-dominance): a population of trials; each new generation's parents are the
// best `population` of the last parents and their children by non-dominated rank, then crowding
// distance; a child comes from two parents picked by binary tournament, crossed over and mutated.
// Numbers (in the space's coordinates: the log of a log type) cross by simulated binary crossover
// and mutate polynomially (Deb's operators, the classic NSGA-II: Optuna's default is a uniform
// swap, `crossover=uniform` here); integers and quantized values are rounded after; choices (and
// a nested choice's whole value) swap uniformly and mutate by a fresh draw. The first generation
// is a Latin hypercube over the space.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "baton/core/options.h"
#include "baton/exec/pareto.h"
#include "baton/exec/strategy.h"

namespace baton {

namespace coordinates {
class LatinHypercube;
}

class Nsga2Options {
  BATON_ARG(int, population) = 50;                 // parents per generation (and the first generation's size); >= 2
  BATON_ARG(double, crossover_probability) = 0.9;  // a child of two parents; else a copy of one, mutated
  BATON_ARG(double, swapping_probability) = 0.5;   // uniform crossover: each parameter from the other parent
  BATON_ARG(double, mutation_probability) = 0;     // per parameter; 0: 1 / dimensions
  BATON_ARG(std::string, crossover) = "sbx";       // sbx (numbers; choices swap) or uniform (all swap)
  BATON_ARG(double, eta_crossover) = 15;           // SBX's distribution index (larger: children nearer parents)
  BATON_ARG(double, eta_mutation) = 20;            // polynomial mutation's
};

class Nsga2Strategy : public Strategy {
 public:
  Nsga2Strategy(SearchSpace space, uint64_t seed, Objectives objectives, Nsga2Options options = {});
  ~Nsga2Strategy() override;
  std::string name() const override { return "nsga2"; }
  std::optional<nlohmann::json> suggest() override;
  void observe(const Trial& trial) override;

 private:
  struct Member {
    nlohmann::json parameters;
    std::vector<double> x;  // coordinates
    std::vector<double> losses;
    double violation = 0;
    std::size_t rank = 0;
    double crowding = 0;
  };
  const Member& tournament();
  nlohmann::json child_of(const Member& a, const Member& b);
  void select();

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
