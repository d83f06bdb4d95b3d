#include "baton/exec/model_strategy.h"

#include <algorithm>
#include <cmath>

#include "coordinates.h"

namespace baton {

ModelStrategy::ModelStrategy(SearchSpace space, uint64_t seed, Objectives objectives, int startup_trials)
    : space_(std::move(space)), rng_(seed), objectives_(std::move(objectives)), startup_trials_(startup_trials) {}

ModelStrategy::~ModelStrategy() = default;

std::string ModelStrategy::plan() const {
  if (startup_trials_ <= 0) return {};
  return name() + ": the first " + std::to_string(startup_trials_) +
         " trials are spread over the space at random (a Latin hypercube; startup_trials), then its model "
         "chooses";
}

ModelStrategy& ModelStrategy::branch(std::size_t dimension, std::size_t choice) {
  auto& sub = branches_[{dimension, choice}];
  if (!sub) sub = nested(SearchSpace::from_dimensions(space_.dimensions()[dimension].nested[choice]), rng_());
  return *sub;
}

void ModelStrategy::observe(const Trial& trial) {
  const auto& dims = space_.dimensions();
  const auto x = coordinates::of(dims, trial.parameters);
  if (!x) return;  // not from this space
  const std::string key = trial.parameters.dump();
  auto running = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.first == key; });
  if (running != running_.end()) running_.erase(running);
  if (!objectives_.usable(trial)) return;
  for (std::size_t k = 0; k < dims.size(); ++k) {  // the inner parameters of the choices it took
    if (dims[k].type != "choice") continue;
    const auto i = static_cast<std::size_t>((*x)[k]);
    if (dims[k].nested[i].empty()) continue;
    Trial inner = trial;
    inner.parameters = trial.parameters[dims[k].name];
    inner.parameters.erase("_name");
    branch(k, i).observe(inner);
  }
  auto losses = objectives_.losses(trial);
  Observation o{losses.front(), observed_++, *x, losses, objectives_.violation(trial), {}};
  for (std::size_t i = 0; i < objectives_.constraints.size(); ++i) {
    const auto& c = objectives_.constraints[i];
    o.margins.push_back(c.at_most ? trial.metrics.constraints[i] - c.bound : c.bound - trial.metrics.constraints[i]);
  }
  auto rank = [](const Observation& b) { return std::make_pair(b.violation, b.violation > 0 ? 0.0 : b.loss); };
  auto at = std::upper_bound(sorted_.begin(), sorted_.end(), rank(o),
                             [&](const std::pair<double, double>& k, const Observation& b) { return k < rank(b); });
  sorted_.insert(at, std::move(o));
}

void ModelStrategy::restore(const std::vector<Trial>& trials) {
  Strategy::restore(trials);  // replays the suggestions, observes the completed trials
  running_.clear();           // what is still to run will run again: it counts as running
  for (const auto& t : trials) {
    if (t.completed()) continue;
    if (auto x = coordinates::of(space_.dimensions(), t.parameters)) running_.emplace_back(t.parameters.dump(), *x);
  }
}

// Parameters from coordinates; a nested choice's inner parameters from its own strategy.
nlohmann::json ModelStrategy::parameters_at(const std::vector<double>& x) {
  const auto& dims = space_.dimensions();
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
  if (suggested_ < startup_trials_ && observed_ + static_cast<int64_t>(running_.size()) < startup_trials_) {
    if (!startup_) {
      startup_ = std::make_unique<coordinates::LatinHypercube>(space_.dimensions(),
                                                               static_cast<std::size_t>(startup_trials_), rng_);
    }
    out = parameters_at(startup_->point(static_cast<std::size_t>(suggested_), rng_));
  } else if (sorted_.empty()) {
    out = space_.sample(rng_);  // every trial so far failed: nothing to model
  } else {
    std::vector<std::vector<double>> running;
    running.reserve(running_.size());
    for (const auto& r : running_) running.push_back(r.second);
    out = parameters_at(model_point(sorted_, running));
  }
  ++suggested_;
  if (auto x = coordinates::of(space_.dimensions(), out)) {
    running_.emplace_back(out.dump(), *x);
    if (running_.size() > 256) running_.erase(running_.begin());  // suggestions that never ran
  }
  return out;
}

}  // namespace baton
