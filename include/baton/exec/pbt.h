// Population-based training (Jaderberg et al. 2017), as Ray Tune's PopulationBasedTraining in its
// synchronous mode: `population` trials train side by side, each for one `interval` at a time; at
// each interval's end the bottom `quantile` (by the search's metric there) copies the checkpoint of
// a random trial of the top quantile (weights, optimizer, schedulers, data position: the whole
// state) and goes on with that trial's parameters explored: each one, with `resample_probability`,
// drawn anew from the space, else a number multiplied by one of `perturb` (kept in its range,
// rounded as its type) and a choice moved to a neighbour. `baton search --strategy pbt` runs it
// (Experiment: the checkpoints are copied in the search's run folder, each exploit is stored with
// its trial). The strategy itself decides; it trains nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/options.h"
#include "baton/core/time.h"
#include "baton/exec/engine.h"
#include "baton/exec/search.h"
#include "baton/exec/space.h"
#include "baton/exec/strategy.h"

namespace baton {

class PbtOptions {
  BATON_ARG(int, population) = 8;                        // trials trained side by side; at least 2
  BATON_ARG(std::optional<Time>, interval);              // training between exploits (500ba, 1ep, 6400sp); required
  BATON_ARG(double, quantile) = 0.25;                    // the bottom and top fractions (at most half each)
  BATON_ARG(std::vector<double>, perturb) = {0.8, 1.2};  // the factors a number is multiplied by
  BATON_ARG(double, resample_probability) = 0.25;        // a parameter drawn anew instead
};

// One trial at an interval's end: its parameters and its metric there.
struct PbtMember {
  int64_t id = 0;
  nlohmann::json parameters;
  double score = 0.0;
};

// A trial of the bottom quantile takes `from`'s state and goes on with `parameters`.
struct PbtDecision {
  int64_t id = 0;
  int64_t from = 0;
  nlohmann::json parameters;
  nlohmann::json changes = nlohmann::json::object();  // {name: [old, new]}: the parameters that changed
  double score = 0.0, from_score = 0.0;
};

class PopulationBasedTraining : public Strategy {
 public:
  ~PopulationBasedTraining() override;
  // Throws std::invalid_argument for options out of range or no interval.
  PopulationBasedTraining(SearchSpace space, uint64_t seed, bool maximize, PbtOptions options);
  std::string name() const override { return "pbt"; }
  // The first population, drawn at random; then nothing (the trials go on, they are not replaced).
  std::optional<nlohmann::json> suggest() override;

  // The exploits at the end of interval `round` (0, 1, ...) over the trials still training, the
  // same for the same seed, round and members (a resumed search decides as the killed one did).
  std::vector<PbtDecision> exploit(int64_t round, const std::vector<PbtMember>& members) const;
  // `parameters` with each of the space's parameters explored (see above).
  nlohmann::json explore(const nlohmann::json& parameters, std::mt19937_64& rng) const;
  // How many trials of `n` are in each quantile: ceil(n * quantile), at most n / 2.
  std::size_t quantile_size(std::size_t n) const;

  const PbtOptions& options() const;
  bool maximize() const;
  // Where the runs of interval `round` stop: (round + 1) * interval ("1000ba").
  Time until(int64_t round) const;
  // The interval the population trains now (run_pbt sets it; the trial runs read it as they start).
  int64_t round() const;
  void set_round(int64_t round);

 private:
  nlohmann::json explore_one(const Dimension& d, const nlohmann::json& value, std::mt19937_64& rng) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What run_pbt needs from the search around it.
struct PbtHooks {
  // `from`'s checkpoint at the interval's end becomes `id`'s (throws when it cannot).
  std::function<void(int64_t id, int64_t from)> copy_state;
  // The loop's state (the round, the exploits being applied), kept where a resume finds it.
  std::function<void(const nlohmann::json& state)> save_state;
  std::function<void(const SearchProgress&)> on_progress;  // after every trial run's end
};

// Runs the population on `engine` to its end: the first population submitted, each trial's run
// stopped at the interval's end (a trial Trained with metrics.paused_at), the exploits decided
// once every trial has stopped, the states copied, every trial continued under its id (with an
// Exploit recorded when it took another's state). `state`: save_state's last value when the search
// is resumed (the trials are in the engine already), else null. Returns the best trial.
std::optional<Trial> run_pbt(PopulationBasedTraining& pbt, TrialTable& engine, const nlohmann::json& state,
                             const PbtHooks& hooks);

}  // namespace baton
