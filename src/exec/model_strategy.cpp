#include "baton/exec/model_strategy.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "coordinates.h"

namespace baton {

struct ModelStrategy::Impl {
  SearchSpace space_;
  std::mt19937_64 rng_;
  Objectives objectives_;
  int startup_trials_;
  std::unique_ptr<coordinates::LatinHypercube> startup_;
  std::map<std::pair<std::size_t, std::size_t>, std::unique_ptr<ModelStrategy>> branches_;
  std::vector<Observation> sorted_;                                   // by loss
  std::vector<std::pair<std::string, std::vector<double>>> running_;  // suggested, not yet observed
  int64_t suggested_ = 0, observed_ = 0;
};

std::size_t ModelStrategy::observations() const { return impl_->sorted_.size(); }
const Objectives& ModelStrategy::objectives() const { return impl_->objectives_; }
const SearchSpace& ModelStrategy::space() const { return impl_->space_; }
std::mt19937_64& ModelStrategy::rng() { return impl_->rng_; }

ModelStrategy::ModelStrategy(SearchSpace space, uint64_t seed, Objectives objectives, int startup_trials)
    : impl_(std::make_unique<Impl>()) {
  impl_->space_ = std::move(space);
  impl_->rng_.seed(seed);
  impl_->objectives_ = std::move(objectives);
  impl_->startup_trials_ = startup_trials;
}

ModelStrategy::~ModelStrategy() = default;

std::string ModelStrategy::plan() const {
  if (impl_->startup_trials_ <= 0) return {};
  return name() + ": the first " + std::to_string(impl_->startup_trials_) +
         " trials are spread over the space at random (a Latin hypercube; startup_trials), then its model "
         "chooses";
}

ModelStrategy& ModelStrategy::branch(std::size_t dimension, std::size_t choice) {
  auto& sub = impl_->branches_[{dimension, choice}];
  if (!sub)
    sub = nested(SearchSpace::from_dimensions(impl_->space_.dimensions()[dimension].nested[choice]), impl_->rng_());
  return *sub;
}

void ModelStrategy::observe(const Trial& trial) {
  const auto& dims = impl_->space_.dimensions();
  const auto x = coordinates::of(dims, trial.parameters);
  if (!x) return;  // not from this space
  const std::string key = trial.parameters.dump();
  auto running =
      std::find_if(impl_->running_.begin(), impl_->running_.end(), [&](const auto& r) { return r.first == key; });
  if (running != impl_->running_.end()) impl_->running_.erase(running);
  if (!impl_->objectives_.usable(trial)) return;
  for (std::size_t k = 0; k < dims.size(); ++k) {  // the inner parameters of the choices it took
    if (dims[k].type != "choice") continue;
    const auto i = static_cast<std::size_t>((*x)[k]);
    if (dims[k].nested[i].empty()) continue;
    Trial inner = trial;
    inner.parameters = trial.parameters[dims[k].name];
    inner.parameters.erase("_name");
    branch(k, i).observe(inner);
  }
  auto losses = impl_->objectives_.losses(trial);
  Observation o{losses.front(), impl_->observed_++, *x, losses, impl_->objectives_.violation(trial), {}};
  for (std::size_t i = 0; i < impl_->objectives_.constraints.size(); ++i) {
    const auto& c = impl_->objectives_.constraints[i];
    o.margins.push_back(c.at_most ? trial.metrics.constraints[i] - c.bound : c.bound - trial.metrics.constraints[i]);
  }
  auto rank = [](const Observation& b) { return std::make_pair(b.violation, b.violation > 0 ? 0.0 : b.loss); };
  auto at = std::upper_bound(impl_->sorted_.begin(), impl_->sorted_.end(), rank(o),
                             [&](const std::pair<double, double>& k, const Observation& b) { return k < rank(b); });
  impl_->sorted_.insert(at, std::move(o));
}

void ModelStrategy::restore(const std::vector<Trial>& trials) {
  Strategy::restore(trials);  // replays the suggestions, observes the completed trials
  impl_->running_.clear();    // what is still to run will run again: it counts as running
  for (const auto& t : trials) {
    if (t.completed()) continue;
    if (auto x = coordinates::of(impl_->space_.dimensions(), t.parameters))
      impl_->running_.emplace_back(t.parameters.dump(), *x);
  }
}

// Parameters from coordinates; a nested choice's inner parameters from its own strategy.
nlohmann::json ModelStrategy::parameters_at(const std::vector<double>& x) {
  const auto& dims = impl_->space_.dimensions();
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t k = 0; k < dims.size(); ++k) {
    out[dims[k].name] = coordinates::value_of(dims[k], x[k]);
    if (dims[k].type != "choice") continue;
    const auto i = static_cast<std::size_t>(x[k]);
    if (dims[k].nested[i].empty()) continue;
    auto inner = branch(k, i).suggest().value_or(nlohmann::json::object());
    inner["_name"] = dims[k].choices[i]["_name"];
    out[dims[k].name] = inner;
  }
  return out;
}

std::optional<nlohmann::json> ModelStrategy::suggest() {
  nlohmann::json out;
  // The start-up ends when this worker made its start-up suggestions or when the study holds as
  // many trials (done or running), whichever comes first: in a shared search the other workers'
  // results count too, so N workers do not make N times the random start.
  if (impl_->suggested_ < impl_->startup_trials_ &&
      impl_->observed_ + static_cast<int64_t>(impl_->running_.size()) < impl_->startup_trials_) {
    if (!impl_->startup_) {
      impl_->startup_ = std::make_unique<coordinates::LatinHypercube>(
          impl_->space_.dimensions(), static_cast<std::size_t>(impl_->startup_trials_), impl_->rng_);
    }
    out = parameters_at(impl_->startup_->point(static_cast<std::size_t>(impl_->suggested_), impl_->rng_));
  } else if (impl_->sorted_.empty()) {
    out = impl_->space_.sample(impl_->rng_);  // every trial so far failed: nothing to model
  } else {
    std::vector<std::vector<double>> running;
    running.reserve(impl_->running_.size());
    for (const auto& r : impl_->running_) running.push_back(r.second);
    out = parameters_at(model_point(impl_->sorted_, running));
  }
  ++impl_->suggested_;
  if (auto x = coordinates::of(impl_->space_.dimensions(), out)) {
    impl_->running_.emplace_back(out.dump(), *x);
    if (impl_->running_.size() > 256) impl_->running_.erase(impl_->running_.begin());  // suggestions that never ran
  }
  return out;
}

}  // namespace baton
