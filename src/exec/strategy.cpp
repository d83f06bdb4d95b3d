#include "baton/exec/strategy.h"

#include <cmath>
#include <stdexcept>

#include "baton/core/options.h"
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

std::vector<std::string> strategy_names() { return {"random", "grid", "tpe", "gp", "evolution"}; }

namespace {

// A strategy's settings, each taken once; what is left over is an unknown option.
class Settings {
 public:
  Settings(std::string strategy, nlohmann::json settings) : strategy_(std::move(strategy)), left_(std::move(settings)) {
    if (left_.is_null()) left_ = nlohmann::json::object();
    if (!left_.is_object()) throw std::invalid_argument("strategy " + strategy_ + ": options must be a mapping");
  }
  void integer(const char* key, int& out, int least) {
    if (!left_.contains(key)) return;
    const auto& v = left_[key];
    if (!v.is_number_integer() || v.get<int64_t>() < least || v.get<int64_t>() > 1000000) {
      fail(key, v, "an integer >= " + std::to_string(least));
    }
    out = v.get<int>();
    left_.erase(key);
  }
  void number(const char* key, double& out, double above, double at_most = INFINITY) {
    if (!left_.contains(key)) return;
    const auto& v = left_[key];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || !(v.get<double>() > above) ||
        !(v.get<double>() <= at_most)) {
      fail(key, v,
           "a number > " + nlohmann::json(above).dump() +
               (std::isfinite(at_most) ? " and <= " + nlohmann::json(at_most).dump() : std::string()));
    }
    out = v.get<double>();
    left_.erase(key);
  }
  void boolean(const char* key, bool& out) {
    if (!left_.contains(key)) return;
    const auto& v = left_[key];
    if (!v.is_boolean()) fail(key, v, "true or false");
    out = v.get<bool>();
    left_.erase(key);
  }
  // Throws when a setting was not taken; `known`: the strategy's option names.
  void done(const std::vector<std::string>& known) const {
    if (left_.empty()) return;
    throw std::invalid_argument("strategy " + strategy_ + ": " + unknown_name("option", left_.begin().key(), known));
  }

 private:
  [[noreturn]] void fail(const char* key, const nlohmann::json& v, const std::string& want) const {
    throw std::invalid_argument("strategy " + strategy_ + ": option '" + key + "' needs " + want + ", got " + v.dump());
  }
  std::string strategy_;
  nlohmann::json left_;
};

}  // namespace

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

std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space, StrategyOptions options) {
  Settings s(name, options.settings());
  if (name == "random") {
    s.done({});
    return std::make_unique<RandomStrategy>(space, options.seed());
  }
  if (name == "grid") {
    s.integer("points", options.grid_points(), 2);
    s.done({"points"});
    return std::make_unique<GridStrategy>(space, options.grid_points());
  }
  if (name == "tpe") {
    TpeOptions t = TpeOptions().seed(options.seed()).maximize(options.maximize());
    s.integer("startup_trials", t.startup_trials(), 0);
    s.integer("candidates", t.candidates(), 1);
    s.boolean("multivariate", t.multivariate());
    s.number("prior_weight", t.prior_weight(), 0.0);
    s.integer("max_rest", t.max_rest(), 1);
    s.boolean("constant_liar", t.constant_liar());
    s.number("gamma", t.gamma(), 0.0, 1.0);
    s.boolean("ei_weights", t.ei_weights());
    s.number("clip_exponent", t.clip_exponent(), 0.0);
    s.number("min_bandwidth", t.min_bandwidth(), 0.0, 0.1);
    s.done({"startup_trials", "candidates", "multivariate", "prior_weight", "max_rest", "constant_liar", "gamma",
            "ei_weights", "clip_exponent", "min_bandwidth"});
    return std::make_unique<TpeStrategy>(space, t);
  }
  if (name == "gp") {
    GpOptions g = GpOptions().seed(options.seed()).maximize(options.maximize());
    s.integer("startup_trials", g.startup_trials(), 0);
    s.integer("candidates", g.candidates(), 1);
    s.integer("local_starts", g.local_starts(), 0);
    s.boolean("constant_liar", g.constant_liar());
    s.done({"startup_trials", "candidates", "local_starts", "constant_liar"});
    return std::make_unique<GpStrategy>(space, g);
  }
  if (name == "evolution") {
    EvolutionOptions e;
    s.integer("population", e.population(), 2);
    s.integer("sample_size", e.sample_size(), 1);
    s.done({"population", "sample_size"});
    return std::make_unique<EvolutionStrategy>(space, options.seed(), options.maximize(), e);
  }
  throw std::invalid_argument(unknown_name("strategy", name, strategy_names()));
}

}  // namespace baton
