#include "baton/exec/tpe.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace baton {
namespace {

bool is_log(const Dimension& d) { return d.type == "loguniform" || d.type == "qloguniform"; }

// A numeric dimension's internal range: log for log types; randint as [low, high - 1]; a normal
// as mu ± 4 sigma.
std::pair<double, double> range_of(const Dimension& d) {
  if (d.type == "normal") return {d.bounds[0] - 4 * d.bounds[1], d.bounds[0] + 4 * d.bounds[1]};
  if (d.type == "randint") return {std::ceil(d.bounds[0]) - 0.5, std::ceil(d.bounds[1]) - 0.5};
  if (is_log(d)) return {std::log(d.bounds[0]), std::log(d.bounds[1])};
  return {d.bounds[0], d.bounds[1]};
}

double to_internal(const Dimension& d, const nlohmann::json& v) {
  if (d.type == "choice") {
    for (std::size_t i = 0; i < d.choices.size(); ++i) {
      const bool nested = !d.nested[i].empty();
      if (nested ? (v.is_object() && v.value("_name", nlohmann::json()) == d.choices[i]["_name"]) : v == d.choices[i])
        return static_cast<double>(i);
    }
    return -1;
  }
  const double x = v.get<double>();
  return is_log(d) ? std::log(std::max(x, 1e-300)) : x;
}

nlohmann::json from_internal(const Dimension& d, double x) {
  if (d.type == "choice") return d.choices[static_cast<std::size_t>(x)];  // nested: filled in by the caller
  const auto [lo, hi] = range_of(d);
  x = std::clamp(x, lo, hi);
  if (d.type == "randint") return static_cast<int64_t>(std::clamp(std::round(x), std::ceil(d.bounds[0]), std::ceil(d.bounds[1]) - 1));
  double v = is_log(d) ? std::exp(x) : x;
  if (d.type == "quniform" || d.type == "qloguniform") {
    v = std::clamp(quantize(v, d.bounds[2]), d.bounds[0], d.bounds[1]);
  }
  return v;
}

// A Parzen estimator over a set of observations: per dimension a Gaussian kernel (numeric) or
// a smoothed indicator (choice) around each point, plus a flat prior component.
struct Parzen {
  const std::vector<Dimension>* dims;
  std::vector<const std::vector<double>*> points;
  // Per point and numeric dimension: the kernel's width and its log normaliser (Optuna's rule:
  // the larger gap to a neighbour, clipped to [range / min(100, n + 1), range]).
  std::vector<double> sigma, log_norm;  // [point * dims + dimension]
  std::vector<double> prior_sigma, prior_log_norm, prior_mu;

  void fit() {
    const std::size_t n = points.size();
    sigma.assign(n * dims->size(), 1.0);
    log_norm.assign(n * dims->size(), 0.0);
    prior_sigma.assign(dims->size(), 1.0);
    prior_log_norm.assign(dims->size(), 0.0);
    prior_mu.assign(dims->size(), 0.0);
    std::vector<std::pair<double, std::size_t>> order(n);
    for (std::size_t k = 0; k < dims->size(); ++k) {
      const auto& d = (*dims)[k];
      if (d.type == "choice") continue;
      const auto [lo, hi] = range_of(d);
      prior_mu[k] = 0.5 * (lo + hi);
      prior_sigma[k] = hi - lo;
      prior_log_norm[k] = std::log(prior_sigma[k] * 2.5066282746310002);
      for (std::size_t i = 0; i < n; ++i) order[i] = {(*points[i])[k], i};
      std::sort(order.begin(), order.end());
      const double min_sigma = (hi - lo) / std::min(100.0, static_cast<double>(n) + 1.0);
      for (std::size_t r = 0; r < n; ++r) {
        const double v = order[r].first;
        const double left = v - (r == 0 ? lo : order[r - 1].first);
        const double right = (r + 1 == n ? hi : order[r + 1].first) - v;
        const double s = std::clamp(std::max(left, right), min_sigma, hi - lo);
        sigma[order[r].second * dims->size() + k] = s;
        log_norm[order[r].second * dims->size() + k] = std::log(s * 2.5066282746310002);
      }
    }
  }

  // log of the kernel of point i (i == points.size(): the prior) at x, for dimension k
  double log_kernel(std::size_t k, std::size_t i, double x) const {
    const auto& d = (*dims)[k];
    const bool prior = i == points.size();
    if (d.type == "choice") {
      const double c = static_cast<double>(d.choices.size());
      if (prior) return -std::log(c);
      const double w = 1.0 / (1.0 + static_cast<double>(points.size()));  // smoothing toward the prior
      return std::log((1.0 - w) * ((*points[i])[k] == x ? 1.0 : 0.0) + w / c);
    }
    const double mu = prior ? prior_mu[k] : (*points[i])[k];
    const std::size_t at = i * dims->size() + k;
    const double sg = prior ? prior_sigma[k] : sigma[at];
    const double z = (x - mu) / sg;
    return -0.5 * z * z - (prior ? prior_log_norm[k] : log_norm[at]);
  }

  double log_density(const std::vector<double>& x, bool multivariate) const {
    const std::size_t m = points.size() + 1;  // + the prior
    thread_local std::vector<double> terms;
    terms.resize(m);
    auto log_mean_exp = [&] {
      const double top = *std::max_element(terms.begin(), terms.end());
      double sum = 0;
      for (double t : terms) sum += std::exp(t - top);
      return top + std::log(sum / static_cast<double>(m));
    };
    if (multivariate) {
      for (std::size_t i = 0; i < m; ++i) {
        double s = 0;
        for (std::size_t k = 0; k < x.size(); ++k) s += log_kernel(k, i, x[k]);
        terms[i] = s;
      }
      return log_mean_exp();
    }
    // Per dimension the mixture's density directly: the prior's component (as wide as the range)
    // keeps it well above underflow anywhere in the range.
    double total = 0;
    for (std::size_t k = 0; k < x.size(); ++k) {
      double sum = 0;
      for (std::size_t i = 0; i < m; ++i) sum += std::exp(log_kernel(k, i, x[k]));
      total += std::log(sum / static_cast<double>(m));
    }
    return total;
  }

  // A draw from point i's kernel (i == points.size(): the prior) in dimension k.
  double draw(std::size_t k, std::size_t i, std::mt19937_64& rng) const {
    const auto& d = (*dims)[k];
    const bool prior = i == points.size();
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    if (d.type == "choice") {
      const double w = 1.0 / (1.0 + static_cast<double>(points.size()));
      if (!prior && u01(rng) >= w) return (*points[i])[k];
      std::uniform_int_distribution<std::size_t> pick(0, d.choices.size() - 1);
      return static_cast<double>(pick(rng));
    }
    const auto [lo, hi] = range_of(d);
    const double mu = prior ? prior_mu[k] : (*points[i])[k];
    const double sg = prior ? prior_sigma[k] : sigma[i * dims->size() + k];
    for (int attempt = 0; attempt < 16; ++attempt) {
      const double x = std::normal_distribution<double>(mu, sg)(rng);
      if (x >= lo && x <= hi) return x;
    }
    return std::clamp(mu, lo, hi);
  }
};

}  // namespace

TpeStrategy::TpeStrategy(SearchSpace space, TpeOptions options)
    : space_(std::move(space)), options_(options), rng_(options.seed) {
  if (options_.candidates < 1 || options_.max_rest < 1 || options_.startup_trials < 0)
    throw std::invalid_argument("tpe: candidates and max_rest must be >= 1, startup_trials >= 0");
}

TpeStrategy& TpeStrategy::branch(std::size_t dimension, std::size_t choice) {
  auto& sub = branches_[{dimension, choice}];
  if (!sub) {
    TpeOptions o = options_;
    o.seed = rng_();
    sub = std::make_unique<TpeStrategy>(SearchSpace::from_dimensions(space_.dimensions()[dimension].nested[choice]), o);
  }
  return *sub;
}

void TpeStrategy::observe(const Trial& trial) {
  if (trial.status != TrialStatus::kTrained || !trial.metrics.final || !std::isfinite(*trial.metrics.final)) return;
  Obs o;
  o.loss = options_.maximize ? -*trial.metrics.final : *trial.metrics.final;
  const auto& dims = space_.dimensions();
  for (const auto& d : dims) {
    if (!trial.parameters.contains(d.name)) return;  // not from this space
    const double x = to_internal(d, trial.parameters[d.name]);
    if (d.type == "choice" && x < 0) return;
    o.x.push_back(x);
  }
  for (std::size_t k = 0; k < dims.size(); ++k) {  // the inner parameters of the choices it took
    if (dims[k].type != "choice") continue;
    const auto i = static_cast<std::size_t>(o.x[k]);
    if (dims[k].nested[i].empty()) continue;
    Trial inner = trial;
    inner.parameters = trial.parameters[dims[k].name];
    inner.parameters.erase("_name");
    branch(k, i).observe(inner);
  }
  auto at = std::upper_bound(sorted_.begin(), sorted_.end(), o.loss, [](double l, const Obs& b) { return l < b.loss; });
  sorted_.insert(at, std::move(o));
}

std::optional<nlohmann::json> TpeStrategy::suggest() {
  ++suggested_;
  const auto& dims = space_.dimensions();
  if (static_cast<int64_t>(sorted_.size()) < options_.startup_trials) return space_.sample(rng_);
  // Good: the best gamma(n) = min(ceil(0.1 n), 25); rest: the others, at most max_rest of them.
  const std::size_t n = sorted_.size();
  const std::size_t n_good = std::min<std::size_t>(25, std::max<std::size_t>(1, (n + 9) / 10));
  Parzen good{&dims, {}, {}, {}, {}, {}, {}}, rest{&dims, {}, {}, {}, {}, {}, {}};
  for (std::size_t i = 0; i < n_good; ++i) good.points.push_back(&sorted_[i].x);
  const std::size_t n_rest = n - n_good;
  const std::size_t keep = std::min<std::size_t>(n_rest, static_cast<std::size_t>(options_.max_rest));
  for (std::size_t j = 0; j < keep; ++j) rest.points.push_back(&sorted_[n_good + j * n_rest / keep].x);
  good.fit();
  rest.fit();

  std::vector<double> best_x;
  double best_score = -std::numeric_limits<double>::infinity();
  std::uniform_int_distribution<std::size_t> component(0, good.points.size());  // last: the prior
  std::vector<double> x(dims.size());
  for (int c = 0; c < options_.candidates; ++c) {
    if (options_.multivariate) {
      const std::size_t i = component(rng_);
      for (std::size_t k = 0; k < dims.size(); ++k) x[k] = good.draw(k, i, rng_);
    } else {
      for (std::size_t k = 0; k < dims.size(); ++k) x[k] = good.draw(k, component(rng_), rng_);
    }
    const double score = good.log_density(x, options_.multivariate) - rest.log_density(x, options_.multivariate);
    if (score > best_score) {
      best_score = score;
      best_x = x;
    }
  }
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t k = 0; k < dims.size(); ++k) {
    out[dims[k].name] = from_internal(dims[k], best_x[k]);
    if (dims[k].type != "choice") continue;
    const auto i = static_cast<std::size_t>(best_x[k]);
    if (dims[k].nested[i].empty()) continue;
    auto inner = branch(k, i).suggest().value_or(nlohmann::json::object());
    inner["_name"] = dims[k].choices[i]["_name"];
    out[dims[k].name] = inner;
  }
  return out;
}

}  // namespace baton
