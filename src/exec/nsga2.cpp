#include "baton/exec/nsga2.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>

#include "coordinates.h"

namespace baton {
namespace {

bool nested_choice(const Dimension& d) {
  return d.type == "choice" && std::any_of(d.nested.begin(), d.nested.end(), [](const auto& n) { return !n.empty(); });
}

// Simulated binary crossover of one coordinate within [lo, hi] (Deb and Agrawal 1995, bounded
// form): one of the two children, each equally likely.
double sbx(double x1, double x2, double lo, double hi, double eta, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  if (std::abs(x1 - x2) < 1e-14 || !(hi > lo)) return x1;
  const double y1 = std::min(x1, x2), y2 = std::max(x1, x2), u = u01(rng);
  auto spread = [&](double beta) {
    const double alpha = 2.0 - std::pow(beta, -(eta + 1.0));
    return u <= 1.0 / alpha ? std::pow(u * alpha, 1.0 / (eta + 1.0))
                            : std::pow(1.0 / (2.0 - u * alpha), 1.0 / (eta + 1.0));
  };
  const double c1 = 0.5 * ((y1 + y2) - spread(1.0 + 2.0 * (y1 - lo) / (y2 - y1)) * (y2 - y1));
  const double c2 = 0.5 * ((y1 + y2) + spread(1.0 + 2.0 * (hi - y2) / (y2 - y1)) * (y2 - y1));
  return std::clamp(u01(rng) < 0.5 ? c1 : c2, lo, hi);
}

// Polynomial mutation of one coordinate within [lo, hi] (Deb and Goyal 1996, bounded form).
double polynomial_mutation(double y, double lo, double hi, double eta, std::mt19937_64& rng) {
  if (!(hi > lo)) return y;
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const double width = hi - lo, r = u01(rng), power = 1.0 / (eta + 1.0);
  double delta = 0;
  if (r < 0.5) {
    const double xy = 1.0 - (y - lo) / width;
    delta = std::pow(2.0 * r + (1.0 - 2.0 * r) * std::pow(xy, eta + 1.0), power) - 1.0;
  } else {
    const double xy = 1.0 - (hi - y) / width;
    delta = 1.0 - std::pow(2.0 * (1.0 - r) + 2.0 * (r - 0.5) * std::pow(xy, eta + 1.0), power);
  }
  return std::clamp(y + delta * width, lo, hi);
}

}  // namespace

struct Nsga2Strategy::Impl {
  SearchSpace space_;
  std::mt19937_64 rng_;
  Objectives objectives_;
  Nsga2Options options_;
  std::unique_ptr<coordinates::LatinHypercube> start_;
  int64_t started_ = 0;  // first-generation suggestions made
  std::vector<Member> parents_, offspring_;
};

Nsga2Strategy::Nsga2Strategy(SearchSpace space, uint64_t seed, Objectives objectives, Nsga2Options options)
    : impl_(std::make_unique<Impl>()) {
  impl_->space_ = std::move(space);
  impl_->rng_.seed(seed);
  impl_->objectives_ = std::move(objectives);
  impl_->options_ = std::move(options);
  const auto p = [](double v) { return v >= 0 && v <= 1; };
  if (impl_->options_.population() < 2 || !p(impl_->options_.crossover_probability()) ||
      !p(impl_->options_.swapping_probability()) || !p(impl_->options_.mutation_probability()) ||
      !(impl_->options_.eta_crossover() > 0) || !(impl_->options_.eta_mutation() > 0) ||
      (impl_->options_.crossover() != "sbx" && impl_->options_.crossover() != "uniform")) {
    throw std::invalid_argument(
        "nsga2: population must be >= 2, the probabilities in [0, 1], eta_crossover and eta_mutation > 0, "
        "crossover sbx or uniform");
  }
}

Nsga2Strategy::~Nsga2Strategy() = default;

std::optional<nlohmann::json> Nsga2Strategy::suggest() {
  if (!impl_->parents_.empty()) return child_of(tournament(), tournament());
  const auto size = static_cast<std::size_t>(impl_->options_.population());
  if (static_cast<std::size_t>(impl_->started_) >= size)
    return impl_->space_.sample(impl_->rng_);  // failed trials: more of the first
  if (!impl_->start_)
    impl_->start_ = std::make_unique<coordinates::LatinHypercube>(impl_->space_.dimensions(), size, impl_->rng_);
  const auto x = impl_->start_->point(static_cast<std::size_t>(impl_->started_++), impl_->rng_);
  nlohmann::json out = impl_->space_.sample(impl_->rng_);  // a nested choice's inner values come from here
  const auto& dims = impl_->space_.dimensions();
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (!nested_choice(dims[k])) out[dims[k].name] = coordinates::value_of(dims[k], x[k]);
  }
  return out;
}

// Binary tournament: the lower rank, then the larger crowding distance, wins.
const Nsga2Strategy::Member& Nsga2Strategy::tournament() {
  std::uniform_int_distribution<std::size_t> pick(0, impl_->parents_.size() - 1);
  const Member& a = impl_->parents_[pick(impl_->rng_)];
  const Member& b = impl_->parents_[pick(impl_->rng_)];
  if (a.rank != b.rank) return a.rank < b.rank ? a : b;
  return a.crowding >= b.crowding ? a : b;
}

nlohmann::json Nsga2Strategy::child_of(const Member& a, const Member& b) {
  const auto& dims = impl_->space_.dimensions();
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const bool cross = u01(impl_->rng_) < impl_->options_.crossover_probability();
  const bool sbx_numbers = impl_->options_.crossover() == "sbx";
  const double mutate = impl_->options_.mutation_probability() > 0
                            ? impl_->options_.mutation_probability()
                            : 1.0 / static_cast<double>(std::max<std::size_t>(dims.size(), 1));
  nlohmann::json child = nlohmann::json::object();
  const nlohmann::json fresh = impl_->space_.sample(impl_->rng_);
  auto mutated = [&](std::size_t k, double x) {
    const auto& d = dims[k];
    if (d.type == "choice") return fresh[d.name];
    const auto [lo, hi] = coordinates::range_of(d);
    return coordinates::value_of(d, polynomial_mutation(x, lo, hi, impl_->options_.eta_mutation(), impl_->rng_));
  };
  std::vector<double> x = a.x;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const auto& d = dims[k];
    const bool swap = cross && u01(impl_->rng_) < impl_->options_.swapping_probability();
    if (d.type == "choice") {
      child[d.name] = (swap ? b : a).parameters[d.name];
      x[k] = (swap ? b : a).x[k];
    } else if (swap) {
      const auto [lo, hi] = coordinates::range_of(d);
      x[k] = sbx_numbers ? sbx(a.x[k], b.x[k], lo, hi, impl_->options_.eta_crossover(), impl_->rng_) : b.x[k];
    }
    if (u01(impl_->rng_) < mutate) {
      child[d.name] = mutated(k, x[k]);
    } else if (d.type != "choice") {
      child[d.name] = coordinates::value_of(d, x[k]);
    }
  }
  // A copy of a parent would be a trial spent on a known value: a parameter mutates (a draw may
  // land on the same choice or the same rounded value: again, a few times).
  for (int attempt = 0; attempt < 32 && !dims.empty() && (child == a.parameters || child == b.parameters); ++attempt) {
    const std::size_t k = std::uniform_int_distribution<std::size_t>(0, dims.size() - 1)(impl_->rng_);
    child[dims[k].name] = dims[k].type == "choice" ? impl_->space_.sample(impl_->rng_)[dims[k].name] : mutated(k, x[k]);
  }
  return child;
}

void Nsga2Strategy::observe(const Trial& trial) {
  if (!impl_->objectives_.usable(trial)) return;
  auto x = coordinates::of(impl_->space_.dimensions(), trial.parameters);
  if (!x) return;  // not from this space
  impl_->offspring_.push_back(
      {trial.parameters, std::move(*x), impl_->objectives_.losses(trial), impl_->objectives_.violation(trial)});
  if (impl_->offspring_.size() >= static_cast<std::size_t>(impl_->options_.population())) select();
}

// Elitist selection: the parents and their children, by front; the last front that fits in part
// by crowding distance (the most isolated first).
void Nsga2Strategy::select() {
  std::vector<Member> pool = std::move(impl_->parents_);
  pool.insert(pool.end(), std::make_move_iterator(impl_->offspring_.begin()),
              std::make_move_iterator(impl_->offspring_.end()));
  impl_->offspring_.clear();
  std::vector<std::vector<double>> losses;
  std::vector<double> violations;
  for (const auto& m : pool) {
    losses.push_back(m.losses);
    violations.push_back(m.violation);
  }
  const auto size = static_cast<std::size_t>(impl_->options_.population());
  impl_->parents_.clear();
  const auto fronts = nondominated_fronts(losses, violations, size);
  for (std::size_t r = 0; r < fronts.size() && impl_->parents_.size() < size; ++r) {
    const auto distance = crowding_distances(losses, fronts[r]);
    std::vector<std::size_t> order(fronts[r].size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t i, std::size_t j) { return distance[i] > distance[j]; });
    for (std::size_t i : order) {
      if (impl_->parents_.size() == size) break;
      Member m = pool[fronts[r][i]];
      m.rank = r;
      m.crowding = distance[i];
      impl_->parents_.push_back(std::move(m));
    }
  }
}

}  // namespace baton
