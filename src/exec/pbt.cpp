#include "baton/exec/pbt.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

namespace baton {

struct PopulationBasedTraining::Impl {
  SearchSpace space_;
  uint64_t seed_;
  bool maximize_;
  PbtOptions options_;
  std::mt19937_64 rng_;
  int suggested_ = 0;
  std::atomic<int64_t> round_{0};
};

PopulationBasedTraining::~PopulationBasedTraining() = default;

const PbtOptions& PopulationBasedTraining::options() const { return impl_->options_; }
bool PopulationBasedTraining::maximize() const { return impl_->maximize_; }
int64_t PopulationBasedTraining::round() const { return impl_->round_.load(); }
void PopulationBasedTraining::set_round(int64_t round) { impl_->round_.store(round); }

PopulationBasedTraining::PopulationBasedTraining(SearchSpace space, uint64_t seed, bool maximize, PbtOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->space_ = std::move(space);
  impl_->seed_ = seed;
  impl_->maximize_ = maximize;
  impl_->options_ = std::move(options);
  impl_->rng_.seed(seed);
  const PbtOptions& o = impl_->options_;
  if (!o.interval())
    throw std::invalid_argument(
        "strategy pbt needs interval=TIME, the training between exploits (e.g. interval=500ba or interval=1ep)");
  const TimeUnit unit = o.interval()->unit();
  if ((unit != TimeUnit::kBatch && unit != TimeUnit::kEpoch && unit != TimeUnit::kSample) || o.interval()->value() <= 0)
    throw std::invalid_argument("strategy pbt: interval " + o.interval()->to_string() +
                                " must be a positive number of batches (ba), epochs (ep) or samples (sp)");
  if (o.population() < 2) throw std::invalid_argument("strategy pbt: population must be at least 2");
  if (!(o.quantile() > 0.0 && o.quantile() <= 0.5))
    throw std::invalid_argument("strategy pbt: quantile must be above 0 and at most 0.5");
  if (o.perturb().empty() || o.perturb().size() > 16)
    throw std::invalid_argument("strategy pbt: perturb needs 1 to 16 factors (perturb=0.8:1.2)");
  for (double f : o.perturb()) {
    if (!(f > 0.0) || !std::isfinite(f))
      throw std::invalid_argument("strategy pbt: perturb's factors must be positive numbers (perturb=0.8:1.2)");
  }
  if (!(o.resample_probability() >= 0.0 && o.resample_probability() <= 1.0))
    throw std::invalid_argument("strategy pbt: resample_probability must be from 0 to 1");
}

std::optional<nlohmann::json> PopulationBasedTraining::suggest() {
  if (impl_->suggested_ >= impl_->options_.population()) return std::nullopt;
  ++impl_->suggested_;
  return impl_->space_.sample(impl_->rng_);
}

Time PopulationBasedTraining::until(int64_t round) const {
  return *impl_->options_.interval() * static_cast<double>(round + 1);
}

std::size_t PopulationBasedTraining::quantile_size(std::size_t n) const {
  auto k = static_cast<std::size_t>(std::ceil(static_cast<double>(n) * impl_->options_.quantile() - 1e-9));
  return std::min(k, n / 2);
}

std::vector<PbtDecision> PopulationBasedTraining::exploit(int64_t round, const std::vector<PbtMember>& members) const {
  std::vector<PbtMember> sorted = members;  // worst first
  std::stable_sort(sorted.begin(), sorted.end(), [&](const PbtMember& a, const PbtMember& b) {
    if (a.score != b.score) return impl_->maximize_ ? a.score < b.score : a.score > b.score;
    return a.id < b.id;
  });
  const std::size_t k = quantile_size(sorted.size());
  std::seed_seq seq{static_cast<uint32_t>(impl_->seed_), static_cast<uint32_t>(impl_->seed_ >> 32),
                    static_cast<uint32_t>(round), 0x9b7u};
  std::mt19937_64 rng(seq);
  std::vector<PbtDecision> out;
  for (std::size_t i = 0; i < k; ++i) {
    const PbtMember& low = sorted[i];
    std::uniform_int_distribution<std::size_t> pick(sorted.size() - k, sorted.size() - 1);
    const PbtMember& high = sorted[pick(rng)];
    PbtDecision d{low.id, high.id, explore(high.parameters, rng), nlohmann::json::object(), low.score, high.score};
    for (const auto& [name, value] : d.parameters.items()) {
      const auto old = low.parameters.contains(name) ? low.parameters[name] : nlohmann::json();
      if (old != value) d.changes[name] = {old, value};
    }
    out.push_back(std::move(d));
  }
  return out;
}

nlohmann::json PopulationBasedTraining::explore(const nlohmann::json& parameters, std::mt19937_64& rng) const {
  nlohmann::json out = parameters;
  for (const Dimension& d : impl_->space_.dimensions()) {
    out[d.name] = explore_one(d, parameters.contains(d.name) ? parameters[d.name] : nlohmann::json(), rng);
  }
  return out;
}

namespace {

// The index of `value` among a choice's values (a nested choice by its "_name"); -1 when absent.
int choice_index(const Dimension& d, const nlohmann::json& value) {
  for (std::size_t i = 0; i < d.choices.size(); ++i) {
    const bool nested = !d.nested[i].empty();
    if (nested ? value.is_object() && value.value("_name", nlohmann::json()) == d.choices[i]["_name"]
               : value == d.choices[i])
      return static_cast<int>(i);
  }
  return -1;
}

// A number kept inside its dimension's range and rounded as its type.
nlohmann::json fit_number(const Dimension& d, double v) {
  if (d.type == "normal") return v;
  const double lo = d.bounds.at(0), hi = d.bounds.at(1);
  if (d.type == "randint") {
    const double top = std::ceil(hi) - 1;
    return static_cast<int64_t>(std::clamp(std::round(v), std::ceil(lo), top));
  }
  if (d.type == "quniform" || d.type == "qloguniform") v = quantize(v, d.bounds.at(2));
  return std::clamp(v, lo, hi);
}

}  // namespace

nlohmann::json PopulationBasedTraining::explore_one(const Dimension& d, const nlohmann::json& value,
                                                    std::mt19937_64& rng) const {
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const bool resample = u01(rng) < impl_->options_.resample_probability();
  auto fresh = [&] { return SearchSpace::from_dimensions({d}).sample(rng)[d.name]; };
  if (d.type == "choice") {
    const int i = choice_index(d, value);
    if (resample || i < 0) return fresh();
    const int last = static_cast<int>(d.choices.size()) - 1;
    const int j = std::clamp(i + (u01(rng) < 0.5 ? -1 : 1), 0, last);
    if (j == i) {  // the same choice: a nested one's own parameters explored
      nlohmann::json same = value;
      for (const Dimension& n : d.nested[static_cast<std::size_t>(i)])
        same[n.name] = explore_one(n, value.contains(n.name) ? value[n.name] : nlohmann::json(), rng);
      return same;
    }
    if (d.nested[static_cast<std::size_t>(j)].empty()) return d.choices[static_cast<std::size_t>(j)];
    // Another nested choice: its own parameters, drawn.
    nlohmann::json inner = SearchSpace::from_dimensions(d.nested[static_cast<std::size_t>(j)]).sample(rng);
    inner["_name"] = d.choices[static_cast<std::size_t>(j)]["_name"];
    return inner;
  }
  if (resample || !value.is_number()) return fresh();
  std::uniform_int_distribution<std::size_t> factor(0, impl_->options_.perturb().size() - 1);
  return fit_number(d, value.get<double>() * impl_->options_.perturb()[factor(rng)]);
}

namespace {

// The trials that paused at the interval's end with a metric: the population going on.
// With `until`: those that paused there or before (a resumed search's trials that went on past it
// have been continued already).
std::vector<PbtMember> paused_members(const std::vector<Trial>& trials, std::optional<int64_t> until = std::nullopt) {
  std::vector<PbtMember> out;
  for (const auto& t : trials) {
    if (t.status != TrialStatus::kTrained || !t.metrics.paused_at || !t.metrics.final) continue;
    if (until && *t.metrics.paused_at > *until) continue;
    out.push_back({t.id, t.parameters, *t.metrics.final});
  }
  return out;
}

nlohmann::json decision_json(const PbtDecision& d) {
  return {{"id", d.id},           {"from", d.from},   {"parameters", d.parameters},
          {"changes", d.changes}, {"score", d.score}, {"from_score", d.from_score}};
}

// Applies a plan (the exploits at one interval's end): the states copied (unless done already),
// then every member that paused there continued, with its exploit recorded. A resumed search
// applies what the killed one had not.
void apply_plan(nlohmann::json& state, TrialTable& engine, const PbtHooks& hooks) {
  nlohmann::json& plan = state["plan"];
  if (!plan.value("copied", false)) {
    for (const auto& d : plan["decisions"]) hooks.copy_state(d["id"].get<int64_t>(), d["from"].get<int64_t>());
    plan["copied"] = true;
    hooks.save_state(state);
  }
  const int64_t step = plan["step"].get<int64_t>();
  for (const auto& member : paused_members(engine.list(), step)) {
    const nlohmann::json* decision = nullptr;
    for (const auto& d : plan["decisions"]) {
      if (d["id"].get<int64_t>() == member.id) decision = &d;
    }
    engine.continue_trial(member.id, [&](Trial& t) {
      t.metrics.paused_at.reset();
      if (decision == nullptr) return;
      t.parameters = (*decision)["parameters"];
      Exploit e;
      e.step = step;
      e.at = plan.value("at", std::string());
      e.from = (*decision)["from"].get<int64_t>();
      e.score = (*decision)["score"].get<double>();
      e.from_score = (*decision)["from_score"].get<double>();
      e.changes = (*decision)["changes"];
      t.exploits.push_back(std::move(e));
    });
  }
}

// The status line's figures: trials done (ended, not paused at the interval's end), the interval,
// the exploits so far.
void count_progress(const PopulationBasedTraining& pbt, const std::vector<Trial>& trials, SearchProgress& progress) {
  progress.completed =
      std::count_if(trials.begin(), trials.end(), [](const Trial& x) { return x.completed() && !x.metrics.paused_at; });
  int64_t exploits = 0;
  for (const auto& x : trials) exploits += static_cast<int64_t>(x.exploits.size());
  progress.stage = "interval " + std::to_string(pbt.round() + 1) + " (to " + pbt.until(pbt.round()).to_string() +
                   "), " + std::to_string(exploits) + " exploit" + (exploits == 1 ? "" : "s");
}

}  // namespace

std::optional<Trial> run_pbt(PopulationBasedTraining& pbt, TrialTable& engine, const nlohmann::json& state,
                             const PbtHooks& hooks) {
  nlohmann::json now = state.is_object() ? state : nlohmann::json{{"round", 0}};
  pbt.set_round(now.value("round", int64_t{0}));
  SearchProgress progress;
  auto better = [&](const Trial& t) {
    if (t.status != TrialStatus::kTrained || !t.metrics.final) return false;
    if (!progress.best) return true;
    return pbt.maximize() ? *t.metrics.final > *progress.best->metrics.final
                          : *t.metrics.final < *progress.best->metrics.final;
  };
  const auto restored = engine.list();
  pbt.restore(restored);
  for (const auto& t : restored) {
    ++progress.submitted;
    if (t.completed()) ++progress.completed;
    if (better(t)) progress.best = t;
  }
  if (!state.is_object()) hooks.save_state(now);
  while (auto parameters = pbt.suggest()) {  // the first population (the rest of it, resumed)
    engine.submit(*parameters);
    ++progress.submitted;
  }
  if (now.contains("plan")) apply_plan(now, engine, hooks);
  for (;;) {
    while (auto id = engine.wait_any()) {
      auto t = engine.get(*id);
      if (!t) continue;
      count_progress(pbt, engine.list(), progress);
      if (better(*t)) progress.best = *t;
      progress.last = *t;
      if (hooks.on_progress) hooks.on_progress(progress);
    }
    // Every trial has stopped: the interval's end (or the search's).
    const int64_t round = pbt.round();
    const auto members = paused_members(engine.list());
    if (members.empty()) break;
    int64_t step = 0;
    for (const auto& t : engine.list()) {
      if (t.status == TrialStatus::kTrained && t.metrics.paused_at) step = std::max(step, *t.metrics.paused_at);
    }
    nlohmann::json decisions = nlohmann::json::array();
    for (const auto& d : pbt.exploit(round, members)) decisions.push_back(decision_json(d));
    now = {
        {"round", round + 1},
        {"plan", {{"step", step}, {"at", pbt.until(round).to_string()}, {"decisions", decisions}, {"copied", false}}}};
    hooks.save_state(now);
    pbt.set_round(round + 1);
    apply_plan(now, engine, hooks);
  }
  // The best trial as it ended (a trial's metric at an earlier interval end is not its last).
  progress.best.reset();
  for (const auto& t : engine.list()) {
    if (better(t)) progress.best = t;
  }
  return progress.best;
}

}  // namespace baton
