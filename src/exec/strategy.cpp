#include "baton/exec/strategy.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
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

struct RandomStrategy::Impl {
  SearchSpace space_;
  std::mt19937_64 rng_;
};

RandomStrategy::~RandomStrategy() = default;

RandomStrategy::RandomStrategy(SearchSpace space, uint64_t seed) : impl_(std::make_unique<Impl>()) {
  impl_->space_ = std::move(space);
  impl_->rng_.seed(seed);
}

std::optional<nlohmann::json> RandomStrategy::suggest() { return impl_->space_.sample(impl_->rng_); }

struct GridStrategy::Impl {
  std::vector<nlohmann::json> grid_;
  std::size_t next_ = 0;
  std::set<std::string> done_;  // restored trials are not suggested again
};

GridStrategy::~GridStrategy() = default;

GridStrategy::GridStrategy(const SearchSpace& space, int points) : impl_(std::make_unique<Impl>()) {
  impl_->grid_ = space.grid(points);
}

std::optional<nlohmann::json> GridStrategy::suggest() {
  while (impl_->next_ < impl_->grid_.size()) {
    const auto& p = impl_->grid_[impl_->next_++];
    if (!impl_->done_.count(p.dump())) return p;
  }
  return std::nullopt;
}

void GridStrategy::observe(const Trial& trial) { impl_->done_.insert(trial.parameters.dump()); }

struct EvolutionStrategy::Impl {
  SearchSpace space_;
  std::mt19937_64 rng_;
  bool maximize_;
  EvolutionOptions options_;
  std::size_t population_, sample_size_;
  std::deque<Member> living_;  // in the order they finished (aging: the front is the oldest)
  std::set<std::string> suggested_;
};

EvolutionStrategy::~EvolutionStrategy() = default;

std::string EvolutionStrategy::name() const { return impl_->options_.aging() ? "regularized_evolution" : "evolution"; }
bool EvolutionStrategy::better(double a, double b) const { return impl_->maximize_ ? a > b : a < b; }

EvolutionStrategy::EvolutionStrategy(SearchSpace space, uint64_t seed, bool maximize, EvolutionOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->space_ = std::move(space);
  impl_->rng_.seed(seed);
  impl_->maximize_ = maximize;
  impl_->options_ = options;
  impl_->population_ = static_cast<std::size_t>(options.population());
  impl_->sample_size_ = static_cast<std::size_t>(options.sample_size());
  if (options.population() < 2 || options.sample_size() < 1 || options.sample_size() > options.population())
    throw std::invalid_argument(name() + ": need population >= 2 and 1 <= sample_size <= population");
  if (!(options.mutation_prob() >= 0.0 && options.mutation_prob() <= 1.0))
    throw std::invalid_argument(name() + ": mutation_prob must be from 0 to 1");
}

// The best of `sample_size` members drawn without replacement (the first of equals).
const EvolutionStrategy::Member& EvolutionStrategy::tournament() {
  std::vector<std::size_t> order(impl_->living_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  const std::size_t n = std::min(impl_->sample_size_, order.size());
  const Member* best = nullptr;
  for (std::size_t i = 0; i < n; ++i) {  // a partial Fisher-Yates shuffle
    std::uniform_int_distribution<std::size_t> pick(i, order.size() - 1);
    std::swap(order[i], order[pick(impl_->rng_)]);
    const Member& m = impl_->living_[order[i]];
    if (best == nullptr || better(m.second, best->second)) best = &m;
  }
  return *best;
}

// The parent with some parameters drawn anew, each until it differs from the parent's; at least
// one is. A choice of one value is never drawn.
nlohmann::json EvolutionStrategy::mutate(const nlohmann::json& parent) {
  const auto& dims = impl_->space_.dimensions();
  std::vector<std::size_t> open;  // the parameters that can change: not a choice of one value
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d].type != "choice" || dims[d].choices.size() > 1) open.push_back(d);
  }
  if (open.empty()) return parent;
  std::vector<std::size_t> chosen;
  std::bernoulli_distribution draw(impl_->options_.mutation_prob());
  for (std::size_t d : open) {
    if (impl_->options_.mutation_prob() > 0.0 && draw(impl_->rng_)) chosen.push_back(d);
  }
  if (chosen.empty())
    chosen.push_back(open[std::uniform_int_distribution<std::size_t>(0, open.size() - 1)(impl_->rng_)]);
  nlohmann::json child = parent;
  for (std::size_t d : chosen) {
    const std::string& name = dims[d].name;
    for (int attempt = 0; attempt < 32 && child[name] == parent[name]; ++attempt)
      child[name] = impl_->space_.sample(impl_->rng_)[name];
  }
  return child;
}

std::optional<nlohmann::json> EvolutionStrategy::suggest() {
  const bool breed = impl_->living_.size() >= impl_->population_;
  auto fresh = [&] { return breed ? mutate(tournament().first) : impl_->space_.sample(impl_->rng_); };
  nlohmann::json child = fresh();
  // dedup: another mutation (or draw) while this one was suggested before; then a random draw.
  for (int attempt = 0; impl_->options_.dedup() && impl_->suggested_.count(child.dump()) > 0 && attempt < 64; ++attempt)
    child = attempt < 48 ? fresh() : impl_->space_.sample(impl_->rng_);
  impl_->suggested_.insert(child.dump());
  return child;
}

void EvolutionStrategy::observe(const Trial& trial) {
  double value = 0.0;
  if (trial.status == TrialStatus::kTrained && trial.metrics.final && std::isfinite(*trial.metrics.final)) {
    value = *trial.metrics.final;
  } else if (trial.status == TrialStatus::kFailed && impl_->options_.failure_is_worst()) {
    value = impl_->maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  } else {
    return;
  }
  impl_->living_.emplace_back(trial.parameters, value);
  if (impl_->living_.size() <= impl_->population_) return;
  if (impl_->options_.aging()) {
    impl_->living_.pop_front();  // the oldest dies
    return;
  }
  auto worst = impl_->living_.begin();  // the worst dies (the oldest of equals)
  for (auto it = impl_->living_.begin(); it != impl_->living_.end(); ++it) {
    if (better(worst->second, it->second)) worst = it;
  }
  impl_->living_.erase(worst);
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
