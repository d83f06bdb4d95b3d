#include "baton/exec/tpe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "coordinates.h"

namespace baton {
namespace {

constexpr double kLogSqrt2Pi = 0.91893853320467274178;

using coordinates::range_of;
using coordinates::snap;

// log(Phi(b) - Phi(a)) for a < b, accurate in both tails.
double log_gauss_mass(double a, double b) {
  constexpr double r = 0.70710678118654752440;  // 1 / sqrt(2)
  double mass = 0;
  if (a >= 0)
    mass = 0.5 * (std::erfc(a * r) - std::erfc(b * r));
  else if (b <= 0)
    mass = 0.5 * (std::erfc(-b * r) - std::erfc(-a * r));
  else
    mass = 1.0 - 0.5 * std::erfc(-a * r) - 0.5 * std::erfc(b * r);
  return std::log(std::max(mass, 1e-300));
}

// Optuna's default weights of the rest: the newest 25 count 1, older ones ramp down to 1/n.
std::vector<double> age_weights(std::size_t n) {
  std::vector<double> w(n, 1.0);
  if (n < 25) return w;
  const std::size_t ramp = n - 25;
  for (std::size_t i = 0; i < ramp; ++i) {
    const double first = 1.0 / static_cast<double>(n);
    w[i] = ramp == 1 ? first : first + (1.0 - first) * static_cast<double>(i) / static_cast<double>(ramp - 1);
  }
  return w;
}

// How narrow a kernel may be: range * max(floor, (n + 2)^-clip_exponent), and at least one step
// of an integer or quantized parameter (a narrower kernel never leaves its value). The floor is
// min_bandwidth per dimension of the space (at most 10 of them; a nested branch counts its own):
// kernels in a wider space stay wider, so that a few good trials in one poor basin do not hold a
// search there.
struct Clip {
  double exponent, floor;
};

// A Parzen estimator over a set of points: a mixture with one component per point (weight w_i)
// and one flat prior component (weight `prior_weight`). Per numeric dimension a component is a
// Gaussian truncated to the range; per choice a categorical smoothed toward uniform by
// `choice_prior` / (n + 1).
class Parzen {
 public:
  Parzen(const std::vector<Dimension>& dims, std::vector<const std::vector<double>*> points,
         std::vector<double> weights, double prior_weight, double choice_prior, Clip clip)
      : dims_(dims), points_(std::move(points)), n_(points_.size()), clip_(clip) {
    log_w_.resize(n_ + 1);
    weights.push_back(n_ == 0 ? 1.0 : prior_weight);
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    w_.resize(n_ + 1);
    for (std::size_t i = 0; i <= n_; ++i) {
      w_[i] = weights[i] / total;
      log_w_[i] = std::log(std::max(w_[i], 1e-300));
    }
    mu_.assign((n_ + 1) * dims_.size(), 0.0);
    sigma_.assign((n_ + 1) * dims_.size(), 1.0);
    log_norm_.assign((n_ + 1) * dims_.size(), 0.0);
    for (std::size_t k = 0; k < dims_.size(); ++k) {
      if (dims_[k].type == "choice")
        fit_choice(k, choice_prior);
      else
        fit_numeric(k);
    }
  }

  // log p(x) in dimension k alone, or over all (x of every dimension), as a mixture.
  double log_pdf_dimension(std::size_t k, double x) const {
    thread_local std::vector<double> terms;
    terms.resize(n_ + 1);
    for (std::size_t i = 0; i <= n_; ++i) terms[i] = log_w_[i] + log_kernel(k, i, x);
    return log_sum_exp(terms);
  }
  double log_pdf(const std::vector<double>& x) const {
    thread_local std::vector<double> terms;
    terms.resize(n_ + 1);
    for (std::size_t i = 0; i <= n_; ++i) {
      double s = log_w_[i];
      for (std::size_t k = 0; k < x.size(); ++k) s += log_kernel(k, i, x[k]);
      terms[i] = s;
    }
    return log_sum_exp(terms);
  }

  std::size_t draw_component(std::mt19937_64& rng) const {
    std::discrete_distribution<std::size_t> pick(w_.begin(), w_.end());
    return pick(rng);
  }
  // A draw from component i's kernel in dimension k.
  double draw(std::size_t k, std::size_t i, std::mt19937_64& rng) const {
    const auto& d = dims_[k];
    if (d.type == "choice") {
      std::discrete_distribution<std::size_t> pick(
          probs_[k].begin() + static_cast<std::ptrdiff_t>(i * d.choices.size()),
          probs_[k].begin() + static_cast<std::ptrdiff_t>((i + 1) * d.choices.size()));
      return static_cast<double>(pick(rng));
    }
    const auto [lo, hi] = range_of(d);
    const std::size_t at = i * dims_.size() + k;
    std::normal_distribution<double> normal(mu_[at], sigma_[at]);
    for (int attempt = 0; attempt < 64; ++attempt) {
      const double x = normal(rng);
      if (x >= lo && x <= hi) return x;
    }
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  }

 private:
  static double log_sum_exp(const std::vector<double>& terms) {
    const double top = *std::max_element(terms.begin(), terms.end());
    if (!std::isfinite(top)) return top;
    double sum = 0;
    for (double t : terms) sum += std::exp(t - top);
    return top + std::log(sum);
  }

  // Optuna's bandwidth: the larger gap to a neighbour (the outermost points: the gap inward),
  // clipped to [min_sigma, range]; the prior: centred, as wide as the range.
  void fit_numeric(std::size_t k) {
    const auto [lo, hi] = range_of(dims_[k]);
    std::vector<std::pair<double, std::size_t>> order(n_);
    for (std::size_t i = 0; i < n_; ++i) order[i] = {(*points_[i])[k], i};
    std::sort(order.begin(), order.end());
    const double min_sigma = std::max(
        (hi - lo) * std::max(clip_.floor, std::pow(static_cast<double>(n_) + 2.0, -clip_.exponent)), step_of(dims_[k]));
    for (std::size_t r = 0; r < n_; ++r) {
      const double v = order[r].first;
      double left = r == 0 ? v - lo : v - order[r - 1].first;
      double right = r + 1 == n_ ? hi - v : order[r + 1].first - v;
      if (n_ >= 2 && r == 0) left = right;  // the endpoints are not neighbours
      if (n_ >= 2 && r + 1 == n_) right = left;
      set_kernel(k, order[r].second, v, std::clamp(std::max(left, right), min_sigma, hi - lo));
    }
    set_kernel(k, n_, 0.5 * (lo + hi), hi - lo);
  }
  void set_kernel(std::size_t k, std::size_t i, double mu, double sigma) {
    const auto [lo, hi] = range_of(dims_[k]);
    const std::size_t at = i * dims_.size() + k;
    mu_[at] = mu;
    sigma_[at] = sigma;
    log_norm_[at] = std::log(sigma) + kLogSqrt2Pi + log_gauss_mass((lo - mu) / sigma, (hi - mu) / sigma);
  }

  // Per point a categorical: prior_weight / (n + 1) on every choice, + 1 on its own; normalised.
  void fit_choice(std::size_t k, double prior_weight) {
    const std::size_t c = dims_[k].choices.size();
    if (probs_.size() < dims_.size()) probs_.resize(dims_.size());
    auto& p = probs_[k];
    p.assign((n_ + 1) * c, 1.0 / static_cast<double>(c));
    const double base = prior_weight / static_cast<double>(n_ + 1);
    for (std::size_t i = 0; i < n_; ++i) {
      const auto own = static_cast<std::size_t>((*points_[i])[k]);
      for (std::size_t j = 0; j < c; ++j)
        p[i * c + j] = (base + (j == own ? 1.0 : 0.0)) / (1.0 + base * static_cast<double>(c));
    }
  }

  static double step_of(const Dimension& d) {
    if (d.type == "randint") return 1.0;
    return d.type == "quniform" ? d.bounds[2] : 0.0;  // qloguniform's step is not one width in log space
  }

  double log_kernel(std::size_t k, std::size_t i, double x) const {
    const auto& d = dims_[k];
    if (d.type == "choice") return std::log(probs_[k][i * d.choices.size() + static_cast<std::size_t>(x)]);
    const std::size_t at = i * dims_.size() + k;
    const double z = (x - mu_[at]) / sigma_[at];
    return -0.5 * z * z - log_norm_[at];
  }

  const std::vector<Dimension>& dims_;
  std::vector<const std::vector<double>*> points_;
  std::size_t n_;
  Clip clip_;
  std::vector<double> w_, log_w_;
  std::vector<double> mu_, sigma_, log_norm_;  // [component * dims + dimension]
  std::vector<std::vector<double>> probs_;     // choices: [dimension][component * choices + choice]
};

}  // namespace

TpeStrategy::TpeStrategy(SearchSpace space, TpeOptions options)
    : ModelStrategy(
          std::move(space), options.seed(),
          Objectives{options.directions().empty() ? std::vector<bool>{options.maximize()} : options.directions(),
                     options.constraints()},
          options.startup_trials()),
      options_(options) {
  if (options_.candidates() < 1 || options_.max_rest() < 1 || options_.startup_trials() < 0 ||
      !(options_.prior_weight() > 0) || !(options_.gamma() > 0 && options_.gamma() <= 1) ||
      !(options_.clip_exponent() > 0) || !(options_.min_bandwidth() > 0 && options_.min_bandwidth() <= 0.1)) {
    throw std::invalid_argument(
        "tpe: candidates and max_rest must be >= 1, startup_trials >= 0, prior_weight > 0, gamma in (0, 1], "
        "clip_exponent > 0, min_bandwidth in (0, 0.1]");
  }
}

std::unique_ptr<ModelStrategy> TpeStrategy::nested(SearchSpace space, uint64_t seed) const {
  TpeOptions o = options_;
  o.seed(seed);
  return std::make_unique<TpeStrategy>(std::move(space), o);
}

// The good set: the best min(ceil(gamma n), 25) observations (feasible ones by loss first) with
// their kernel weights and the prior's beside them: 1 each and prior_weight, or with `ei_weights`
// each trial's improvement over the best of the rest, the prior their mean (Watanabe 2023: the good
// density then leans to the best trials; the same for any scale). Several objectives: see
// good_of_several.
TpeStrategy::Good TpeStrategy::good_set(const std::vector<Observation>& sorted) const {
  const std::size_t n = sorted.size();
  const auto n_good =
      std::min<std::size_t>(25, static_cast<std::size_t>(std::ceil(options_.gamma() * static_cast<double>(n))));
  if (objectives().size() > 1) return good_of_several(sorted, n_good);
  Good good{std::vector<std::size_t>(n_good), std::vector<double>(n_good, 1.0), options_.prior_weight()};
  std::iota(good.members.begin(), good.members.end(), 0);
  const auto compared = static_cast<std::ptrdiff_t>(std::min(n, n_good + 1));
  const bool comparable =
      std::all_of(sorted.begin(), sorted.begin() + compared, [](const Observation& o) { return o.violation <= 0; });
  if (!options_.ei_weights() || n_good == 0 || n_good >= n || !comparable) return good;
  const double threshold = sorted[n_good].loss;
  double sum = 0;
  for (std::size_t i = 0; i < n_good; ++i) sum += good.weights[i] = std::max(1e-12, threshold - sorted[i].loss);
  good.prior_weight = sum / static_cast<double>(n_good);
  return good;
}

namespace {

// Optuna's reference point for a set of losses: 10% beyond the worst of each (never 0).
std::vector<double> reference_point(const std::vector<std::vector<double>>& losses) {
  std::vector<double> ref = losses.front();
  for (const auto& l : losses) {
    for (std::size_t m = 0; m < ref.size(); ++m) ref[m] = std::max(ref[m], l[m]);
  }
  for (double& r : ref) r = r == 0 ? 1e-12 : std::max(1.1 * r, 0.9 * r);
  return ref;
}

// Greedy hypervolume subset selection (Optuna's _solve_hssp): `k` of the points, each adding the
// most volume to those picked before.
std::vector<std::size_t> greedy_hypervolume_subset(const std::vector<std::vector<double>>& losses, std::size_t k) {
  const auto ref = reference_point(losses);
  std::vector<std::size_t> picked, left(losses.size());
  std::iota(left.begin(), left.end(), 0);
  std::vector<std::vector<double>> chosen;
  while (picked.size() < k && !left.empty()) {
    std::size_t best = 0;
    double best_volume = -1;
    for (std::size_t c = 0; c < left.size(); ++c) {
      chosen.push_back(losses[left[c]]);
      const double v = hypervolume(chosen, ref);
      chosen.pop_back();
      if (v > best_volume) best_volume = v, best = c;
    }
    picked.push_back(left[best]);
    chosen.push_back(losses[left[best]]);
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(best));
  }
  return picked;
}

}  // namespace

// Several objectives (Optuna's MOTPE): the good set is the first fronts of constraint-dominance,
// the last that does not fit whole cut by greedy hypervolume; each good feasible trial on the
// good set's Pareto front weighs its hypervolume contribution (the largest: 1), the others ~0.
TpeStrategy::Good TpeStrategy::good_of_several(const std::vector<Observation>& sorted, std::size_t n_good) const {
  std::vector<std::vector<double>> losses;
  std::vector<double> violations;
  for (const auto& o : sorted) {
    losses.push_back(o.losses);
    violations.push_back(o.violation);
  }
  Good good{{}, {}, options_.prior_weight()};
  for (const auto& front : nondominated_fronts(losses, violations, n_good)) {
    if (good.members.size() + front.size() <= n_good) {
      good.members.insert(good.members.end(), front.begin(), front.end());
      continue;
    }
    std::vector<std::vector<double>> last;
    last.reserve(front.size());
    for (std::size_t i : front) last.push_back(losses[i]);
    for (std::size_t i : greedy_hypervolume_subset(last, n_good - good.members.size()))
      good.members.push_back(front[i]);
  }
  good.weights.assign(good.members.size(), 1.0);
  std::vector<std::vector<double>> feasible;
  std::vector<std::size_t> feasible_at;
  for (std::size_t g = 0; g < good.members.size(); ++g) {
    if (violations[good.members[g]] > 0) continue;
    feasible.push_back(losses[good.members[g]]);
    feasible_at.push_back(g);
  }
  if (feasible.empty()) return good;
  const auto contributions = hypervolume_contributions(feasible, reference_point(feasible));
  const double top = std::max(*std::max_element(contributions.begin(), contributions.end()), 1e-12);
  for (std::size_t f = 0; f < feasible.size(); ++f)
    good.weights[feasible_at[f]] = std::max(contributions[f] / top, 1e-12);
  return good;
}

// The model's suggestion in internal coordinates: candidates from the good density, the best
// log good(x) - log rest(x) wins (jointly, or per dimension when not multivariate).
std::vector<double> TpeStrategy::model_point(const std::vector<Observation>& sorted,
                                             const std::vector<std::vector<double>>& running) {
  const auto& dims = space().dimensions();
  const Good good_trials = good_set(sorted);
  std::vector<const std::vector<double>*> good, rest;
  std::vector<bool> is_good(sorted.size(), false);
  for (std::size_t i : good_trials.members) {
    good.push_back(&sorted[i].x);
    is_good[i] = true;
  }
  std::vector<const Observation*> others;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (!is_good[i]) others.push_back(&sorted[i]);
  }
  std::sort(others.begin(), others.end(),
            [](const Observation* a, const Observation* b) { return a->order < b->order; });
  if (others.size() > static_cast<std::size_t>(options_.max_rest())) {
    others.erase(others.begin(), others.end() - options_.max_rest());
  }
  for (const Observation* o : others) rest.push_back(&o->x);
  std::vector<double> rest_weights = age_weights(rest.size());
  if (options_.constant_liar()) {  // running trials: bad until they say otherwise, as new as it gets
    for (const auto& r : running) {
      rest.push_back(&r);
      rest_weights.push_back(1.0);
    }
  }
  const double dimensions = static_cast<double>(std::min<std::size_t>(dims.size(), 10));
  const Clip clip{options_.clip_exponent(), options_.min_bandwidth() * dimensions};
  const Parzen below(dims, good, good_trials.weights, good_trials.prior_weight, options_.prior_weight(), clip);
  const Parzen above(dims, rest, rest_weights, options_.prior_weight(), options_.prior_weight(), clip);

  std::vector<double> best(dims.size());
  if (options_.multivariate()) {
    double best_score = -std::numeric_limits<double>::infinity();
    std::vector<double> x(dims.size());
    for (int c = 0; c < options_.candidates(); ++c) {
      const std::size_t i = below.draw_component(rng());
      for (std::size_t k = 0; k < dims.size(); ++k) x[k] = snap(dims[k], below.draw(k, i, rng()));
      const double score = below.log_pdf(x) - above.log_pdf(x);
      if (score > best_score) {
        best_score = score;
        best = x;
      }
    }
    return best;
  }
  for (std::size_t k = 0; k < dims.size(); ++k) {
    double best_score = -std::numeric_limits<double>::infinity();
    for (int c = 0; c < options_.candidates(); ++c) {
      const double x = snap(dims[k], below.draw(k, below.draw_component(rng()), rng()));
      const double score = below.log_pdf_dimension(k, x) - above.log_pdf_dimension(k, x);
      if (score > best_score) {
        best_score = score;
        best[k] = x;
      }
    }
  }
  return best;
}

}  // namespace baton
