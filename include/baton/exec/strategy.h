// Strategies: what suggests a search's trials from its space (random, grid, evolution here; TPE in
// tpe.h, GP in gp.h), made by name with make_strategy.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/options.h"
#include "baton/exec/pareto.h"
#include "baton/exec/space.h"
#include "baton/exec/trial.h"

namespace baton {

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // How it chooses, said when a search starts where it is not what its name says ("the first 10
  // trials are spread over the space ..."); "" when it is.
  virtual std::string plan() const { return {}; }
  // The next parameters to try; nullopt when the strategy has nothing more (a finished grid).
  virtual std::optional<nlohmann::json> suggest() = 0;
  // A completed trial (in any order).
  virtual void observe(const Trial& trial) { (void)trial; }
  // The trials of an earlier run of this search (resume), in id order: by default the strategy
  // replays its suggestions for them (so a seeded sequence goes on where it stopped instead of
  // starting over) and observes the completed ones.
  virtual void restore(const std::vector<Trial>& trials);
};

class StrategyOptions {
  BATON_ARG(uint64_t, seed) = 0;
  BATON_ARG(bool, maximize) = true;
  // Several objectives: each one's maximize (empty: one objective, `maximize`); random, grid,
  // nsga2 and tpe (motpe) take several. The search's constraints: random and grid ignore them,
  // nsga2 and tpe model them.
  BATON_ARG(std::vector<bool>, directions);
  BATON_ARG(std::vector<Constraint>, constraints);
  BATON_ARG(int, grid_points) = 5;  // grid: values per continuous dimension
  // The strategy's own options by name (docs/search.md has the table), e.g. {"candidates": 48}:
  // tpe (TpeOptions), gp (GpOptions), grid (points), evolution and regularized_evolution
  // (EvolutionOptions).
  BATON_ARG(nlohmann::json, settings) = nlohmann::json::object();
};

// The objectives and constraints the options describe.
Objectives objectives_of(const StrategyOptions& options);

// "random", "grid", "tpe" (tpe.h), "motpe" (tpe.h, several objectives), "gp" (gp.h), "evolution",
// "regularized_evolution", "nsga2" (nsga2.h). An unknown name, an unknown setting or
// a setting of the wrong type or range: std::invalid_argument saying which, and what is known.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space, StrategyOptions options);
std::vector<std::string> strategy_names();
// Adds "KEY=VALUE" (a command line's strategy option; several as "K1=V1,K2=V2") to `settings`:
// VALUE as JSON when it is JSON (48, true, 0.5, [1,2]), else as a string. No '=' or an empty KEY:
// std::invalid_argument.
void add_strategy_setting(nlohmann::json& settings, const std::string& key_value);

class RandomStrategy : public Strategy {
 public:
  ~RandomStrategy() override;
  RandomStrategy(SearchSpace space, uint64_t seed);
  std::string name() const override { return "random"; }
  std::optional<nlohmann::json> suggest() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class GridStrategy : public Strategy {
 public:
  ~GridStrategy() override;
  GridStrategy(const SearchSpace& space, int points);
  std::string name() const override { return "grid"; }
  std::optional<nlohmann::json> suggest() override;
  void observe(const Trial& trial) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Evolution: the first `population` trials are random; then each suggestion draws `sample_size`
// trials of the population (without replacement), copies the best of them and mutates the copy.
// Two ways for the population to stay at `population` trials:
// - "evolution" (aging false): the worst trial dies (tournament selection, Real et al. 2017; NNI's
//   Evolution tuner); a mutation draws one parameter anew.
// - "regularized_evolution" (aging true): the oldest trial dies however good it was (Real et al.
//   2019's aging evolution, NNI's RegularizedEvolution: population 100, sample 25, each parameter
//   drawn anew with probability 0.05).
// A mutation always changes the copy (a parameter drawn anew is drawn until it differs, as the
// paper's, and a copy no draw changed gets one parameter changed); with dedup, an architecture
// already suggested is mutated again (then drawn at random) rather than suggested twice.
class EvolutionOptions {
  BATON_ARG(int, population) = 20;  // trials alive at once (the first are random); at least 2
  BATON_ARG(int, sample_size) = 5;  // how many of them each suggestion compares; 1 to population
  BATON_ARG(bool, aging) = false;   // the oldest dies (true) or the worst (false)
  // Each parameter's chance to be drawn anew; 0: exactly one parameter is.
  BATON_ARG(double, mutation_prob) = 0.0;
  BATON_ARG(bool, dedup) = true;  // never suggest the same parameters twice while others are left
  // A failed trial joins the population as the worst value (true), or is left out (false: NNI's
  // on_failure "ignore").
  BATON_ARG(bool, failure_is_worst) = false;
};

class EvolutionStrategy : public Strategy {
 public:
  ~EvolutionStrategy() override;
  EvolutionStrategy(SearchSpace space, uint64_t seed, bool maximize, EvolutionOptions options = {});
  std::string name() const override;
  std::optional<nlohmann::json> suggest() override;
  void observe(const Trial& trial) override;

 private:
  using Member = std::pair<nlohmann::json, double>;
  const Member& tournament();
  nlohmann::json mutate(const nlohmann::json& parent);
  bool better(double a, double b) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
