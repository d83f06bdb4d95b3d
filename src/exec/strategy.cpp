#include "baton/exec/strategy.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "baton/core/options.h"
#include "baton/core/registry.h"
#include "baton/exec/gp.h"
#include "baton/exec/tpe.h"

namespace baton {

void Strategy::restore(const std::vector<Trial>& trials) {
  for (const auto& t : trials) {
    (void)suggest();
    if (t.completed()) observe(t);
  }
}

RandomStrategy::RandomStrategy(SearchSpace space, uint64_t seed) : space_(std::move(space)), rng_(seed) {}

std::optional<nlohmann::json> RandomStrategy::suggest() { return space_.sample(rng_); }

GridStrategy::GridStrategy(const SearchSpace& space, int points) : grid_(space.grid(points)) {}

std::optional<nlohmann::json> GridStrategy::suggest() {
  while (next_ < grid_.size()) {
    const auto& p = grid_[next_++];
    if (!done_.count(p.dump())) return p;
  }
  return std::nullopt;
}

void GridStrategy::observe(const Trial& trial) { done_.insert(trial.parameters.dump()); }

EvolutionStrategy::EvolutionStrategy(SearchSpace space, uint64_t seed, bool maximize, EvolutionOptions options)
    : space_(std::move(space)),
      rng_(seed),
      maximize_(maximize),
      population_(static_cast<std::size_t>(options.population())),
      sample_size_(static_cast<std::size_t>(options.sample_size())) {
  if (options.population() < 2 || options.sample_size() < 1 || options.sample_size() > options.population())
    throw std::invalid_argument("evolution: need population >= 2 and 1 <= sample_size <= population");
}

std::optional<nlohmann::json> EvolutionStrategy::suggest() {
  if (living_.size() < population_) return space_.sample(rng_);
  std::uniform_int_distribution<std::size_t> pick(0, living_.size() - 1);
  const std::pair<nlohmann::json, double>* parent = nullptr;
  for (std::size_t i = 0; i < sample_size_; ++i) {
    const auto& candidate = living_[pick(rng_)];
    if (!parent || (maximize_ ? candidate.second > parent->second : candidate.second < parent->second))
      parent = &candidate;
  }
  nlohmann::json child = parent->first;
  const auto& dims = space_.dimensions();
  std::uniform_int_distribution<std::size_t> which(0, dims.size() - 1);
  const std::string& name = dims[which(rng_)].name;
  const nlohmann::json fresh = space_.sample(rng_);
  child[name] = fresh[name];
  return child;
}

void EvolutionStrategy::observe(const Trial& trial) {
  if (trial.status != TrialStatus::kTrained || !trial.metrics.final || !std::isfinite(*trial.metrics.final)) return;
  living_.emplace_back(trial.parameters, *trial.metrics.final);
  while (living_.size() > population_) living_.pop_front();  // the oldest dies
}

void add_strategy_setting(nlohmann::json& settings, const std::string& key_value) {
  const auto eq = key_value.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw std::invalid_argument("strategy option '" + key_value + "': needs KEY=VALUE, e.g. candidates=48");
  }
  const std::string value = key_value.substr(eq + 1);
  const nlohmann::json parsed = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_number_float() && !std::isfinite(parsed.get<double>())) {
    throw std::invalid_argument("strategy option '" + key_value + "': the number is out of range");
  }
  settings[key_value.substr(0, eq)] = parsed.is_discarded() ? nlohmann::json(value) : parsed;
}

namespace {

using Strategies = Registry<std::unique_ptr<Strategy>, const SearchSpace&, const StrategyOptions&, OptionReader&>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxCount = 1000000;  // more candidates or trials than this is a typo

// Each strategy reads its own options (docs/search.md has the table) into its XxxOptions, whose
// fields hold the defaults.
const Strategies& strategy_registry() {
  static const Strategies strategies(
      "strategy", Strategies::Order::kRegistration,
      {{"random",
        [](const SearchSpace& space, const StrategyOptions& o, OptionReader&) {
          return std::unique_ptr<Strategy>(std::make_unique<RandomStrategy>(space, o.seed()));
        }},
       {"grid",
        [](const SearchSpace& space, const StrategyOptions& o, OptionReader& r) {
          int points = o.grid_points();
          r.read("points", points, 2, kMaxCount);
          return std::unique_ptr<Strategy>(std::make_unique<GridStrategy>(space, points));
        }},
       {"tpe",
        [](const SearchSpace& space, const StrategyOptions& o, OptionReader& r) {
          TpeOptions t = TpeOptions().seed(o.seed()).maximize(o.maximize());
          r.read("startup_trials", t.startup_trials(), 0, kMaxCount);
          r.read("candidates", t.candidates(), 1, kMaxCount);
          r.read("multivariate", t.multivariate());
          r.read("prior_weight", t.prior_weight(), 0.0, kInf);
          r.read("max_rest", t.max_rest(), 1, kMaxCount);
          r.read("constant_liar", t.constant_liar());
          r.read("gamma", t.gamma(), 0.0, 1.0);
          r.read("ei_weights", t.ei_weights());
          r.read("clip_exponent", t.clip_exponent(), 0.0, kInf);
          r.read("min_bandwidth", t.min_bandwidth(), 0.0, 0.1);
          return std::unique_ptr<Strategy>(std::make_unique<TpeStrategy>(space, t));
        }},
       {"gp",
        [](const SearchSpace& space, const StrategyOptions& o, OptionReader& r) {
          GpOptions g = GpOptions().seed(o.seed()).maximize(o.maximize());
          r.read("startup_trials", g.startup_trials(), 0, kMaxCount);
          r.read("candidates", g.candidates(), 1, kMaxCount);
          r.read("local_starts", g.local_starts(), 0, kMaxCount);
          r.read("constant_liar", g.constant_liar());
          return std::unique_ptr<Strategy>(std::make_unique<GpStrategy>(space, g));
        }},
       {"evolution", [](const SearchSpace& space, const StrategyOptions& o, OptionReader& r) {
          EvolutionOptions e;
          r.read("population", e.population(), 2, kMaxCount);
          r.read("sample_size", e.sample_size(), 1, kMaxCount);
          return std::unique_ptr<Strategy>(std::make_unique<EvolutionStrategy>(space, o.seed(), o.maximize(), e));
        }}});
  return strategies;
}

}  // namespace

std::vector<std::string> strategy_names() { return strategy_registry().names(); }

std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space, StrategyOptions options) {
  OptionReader reader("strategy " + name, options.settings());
  auto strategy = strategy_registry().make(name, space, options, reader);
  reader.finish();
  return strategy;
}

}  // namespace baton
