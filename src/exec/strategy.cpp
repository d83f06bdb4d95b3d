#include "baton/exec/strategy.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace baton {

void Strategy::restore(const std::vector<Trial>& trials) {
  for (const auto& t : trials) {
    (void)suggest();
    if (t.completed()) observe(t);
  }
}

Objectives objectives_of(const StrategyOptions& options) {
  return {options.directions().empty() ? std::vector<bool>{options.maximize()} : options.directions(),
          options.constraints()};
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
  if (parent == nullptr) return space_.sample(rng_);  // sample_size 0 (the constructor refuses it)
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

namespace {

// Where "a=1,b=2" splits: each comma followed by a NAME= (not one inside a value such as [1,2]).
std::vector<std::string> split_settings(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t comma = text.find(','); comma != std::string::npos; comma = text.find(',', comma + 1)) {
    std::size_t i = comma + 1;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
    if (i > comma + 1 && i < text.size() && text[i] == '=' &&
        !std::isdigit(static_cast<unsigned char>(text[comma + 1]))) {
      out.push_back(text.substr(start, comma - start));
      start = comma + 1;
    }
  }
  out.push_back(text.substr(start));
  return out;
}

void add_one_setting(nlohmann::json& settings, const std::string& key_value) {
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

}  // namespace

void add_strategy_setting(nlohmann::json& settings, const std::string& key_value) {
  for (const auto& part : split_settings(key_value)) add_one_setting(settings, part);
}

}  // namespace baton
