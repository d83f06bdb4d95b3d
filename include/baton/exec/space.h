// Search spaces in NNI's format, and the strategies that suggest trials from them.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/options.h"
#include "baton/exec/engine.h"

namespace baton {

// {name: {_type: choice|randint|uniform|quniform|loguniform|qloguniform|normal, _value: [...]}}.
// A choice's value may be an object with "_name" and nested dimensions of its own: a sampled
// value is then that object with its dimensions sampled.
struct Dimension {
  std::string name;
  std::string type;
  std::vector<double> bounds{};  // the numeric _value (not for choice)
  std::vector<nlohmann::json> choices{};
  std::vector<std::vector<Dimension>> nested{};  // per choice (empty when the choice is a plain value)
};

class SearchSpace {
 public:
  // Throws std::invalid_argument "<where>: '<name>': <what> (<fix>)" on a malformed space.
  static SearchSpace from_json(const nlohmann::json& space, const std::string& where = "search space");
  // A .json file, or YAML (anything else); errors name the file.
  static SearchSpace from_file(const std::filesystem::path& path);
  // The file's definition as JSON (what from_file builds from), unchecked.
  static nlohmann::json read_file(const std::filesystem::path& path);
  // `text` (JSON, or else YAML) as JSON; errors start with `where` (and the line for YAML).
  static nlohmann::json parse_text(const std::string& text, bool json, const std::string& where);
  // The dimensions of a nested choice as a space of their own.
  static SearchSpace from_dimensions(std::vector<Dimension> dimensions);

  const std::vector<Dimension>& dimensions() const { return dims_; }
  nlohmann::json sample(std::mt19937_64& rng) const;
  // Every combination: choices and integers in full, continuous ranges at `points` values each
  // (log-spaced for log types). Throws when there would be more than `limit`.
  std::vector<nlohmann::json> grid(int points = 5, std::size_t limit = 1000000) const;
  // Whether `parameters` could have come from this space (names, types, ranges).
  bool contains(const nlohmann::json& parameters) const;

 private:
  std::vector<Dimension> dims_;
};

double sample_dimension(const Dimension& d, std::mt19937_64& rng);  // numeric types only
// round(v / q) * q, without the binary noise (0.15, not 0.15000000000000002).
double quantize(double v, double q);

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
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
  BATON_ARG(int, grid_points) = 5;  // grid: values per continuous dimension
  // The strategy's own options by name (docs/search.md has the table), e.g. {"candidates": 48}:
  // tpe (TpeOptions), gp (GpOptions), grid (points), evolution (population, sample_size).
  BATON_ARG(nlohmann::json, settings) = nlohmann::json::object();
};

// "random", "grid", "tpe" (tpe.h), "gp" (gp.h), "evolution". An unknown name, an unknown setting or
// a setting of the wrong type or range: std::invalid_argument saying which, and what is known.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space, StrategyOptions options);
std::vector<std::string> strategy_names();
// Adds one "KEY=VALUE" (a command line's strategy option) to `settings`: VALUE as JSON when it is
// JSON (48, true, 0.5), else as a string. No '=' or an empty KEY: std::invalid_argument.
void add_strategy_setting(nlohmann::json& settings, const std::string& key_value);

class RandomStrategy : public Strategy {
 public:
  RandomStrategy(SearchSpace space, uint64_t seed);
  std::string name() const override { return "random"; }
  std::optional<nlohmann::json> suggest() override;

 private:
  SearchSpace space_;
  std::mt19937_64 rng_;
};

class GridStrategy : public Strategy {
 public:
  GridStrategy(const SearchSpace& space, int points);
  std::string name() const override { return "grid"; }
  std::optional<nlohmann::json> suggest() override;
  void observe(const Trial& trial) override;

 private:
  std::vector<nlohmann::json> grid_;
  std::size_t next_ = 0;
  std::set<std::string> done_;  // restored trials are not suggested again
};

// Regularized evolution (Real et al. 2019, as NNI's): the first `population` trials are random;
// then each suggestion takes `sample_size` of the living population at random, copies the best,
// and draws one of its parameters anew. The population ages: only the last `population` finished
// trials live.
class EvolutionOptions {
  BATON_ARG(int, population) = 20;  // trials alive at once (the first are random); at least 2
  BATON_ARG(int, sample_size) = 5;  // how many of them each suggestion compares; 1 to population
};

class EvolutionStrategy : public Strategy {
 public:
  EvolutionStrategy(SearchSpace space, uint64_t seed, bool maximize, EvolutionOptions options = {});
  std::string name() const override { return "evolution"; }
  std::optional<nlohmann::json> suggest() override;
  void observe(const Trial& trial) override;

 private:
  SearchSpace space_;
  std::mt19937_64 rng_;
  bool maximize_;
  std::size_t population_, sample_size_;
  std::deque<std::pair<nlohmann::json, double>> living_;
};

struct SearchProgress {
  int64_t submitted = 0;
  int64_t completed = 0;
  std::optional<Trial> best{};
};

// The strategy loop: submits while a worker is idle and the budget lasts, until `trials` were
// submitted (counting those already in the engine, e.g. after a resume), and feeds each completed
// trial back to the strategy. Event-driven: it sleeps in wait_any between completions.
// `on_progress` runs after every completion. Returns the best Trained trial.
std::optional<Trial> run_search(Strategy& strategy, ExecutionEngine& engine, int64_t trials, bool maximize,
                                const std::function<void(const SearchProgress&)>& on_progress = {});

}  // namespace baton
