#include "baton/exec/cmaes.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "coordinates.h"

namespace baton {
namespace {

// Eigenvalues and eigenvectors of a symmetric n x n matrix (row-major) by cyclic Jacobi rotations:
// `vectors` gets them as columns.
void symmetric_eigen(std::vector<double> a, std::size_t n, std::vector<double>& values, std::vector<double>& vectors) {
  vectors.assign(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) vectors[i * n + i] = 1.0;
  for (int sweep = 0; sweep < 64; ++sweep) {
    double off = 0;
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t q = p + 1; q < n; ++q) off += a[p * n + q] * a[p * n + q];
    }
    if (off < 1e-30) break;
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (std::abs(apq) < 1e-300) continue;
        const double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (std::size_t k = 0; k < n; ++k) {  // A <- A J (columns p, q)
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (std::size_t k = 0; k < n; ++k) {  // A <- J^T A (rows p, q)
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        for (std::size_t k = 0; k < n; ++k) {
          const double vkp = vectors[k * n + p], vkq = vectors[k * n + q];
          vectors[k * n + p] = c * vkp - s * vkq;
          vectors[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  values.resize(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = a[i * n + i];
}

}  // namespace

CmaEsStrategy::CmaEsStrategy(SearchSpace space, uint64_t seed, bool maximize, CmaEsOptions options)
    : space_(std::move(space)), rng_(seed), maximize_(maximize), options_(options) {
  const auto& dims = space_.dimensions();
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (dims[k].type != "choice") numeric_.push_back(k);
  }
  if (numeric_.empty()) {
    throw std::invalid_argument(
        "strategy cmaes: the space has only choices, and CMA-ES searches numbers (its choices are drawn at random); "
        "use tpe, evolution or grid");
  }
  if (options_.population() < 0 || options_.population() > 100000 || !(options_.sigma() > 0 && options_.sigma() <= 1) ||
      options_.separable_above() < 1)
    throw std::invalid_argument("cmaes: population must be 0 (default) or more, sigma in (0, 1], separable_above >= 1");
  n_ = numeric_.size();
  separable_ = static_cast<int>(n_) > options_.separable_above();
  lambda_ = options_.population() > 0 ? options_.population()
                                      : 4 + static_cast<int>(std::floor(3 * std::log(static_cast<double>(n_))));
  lambda_ = std::max(lambda_, 2);
  start_run(false);
}

// A run: the weights and learning rates for the population, the mean (the middle of the space, or
// at random on a restart), the step, a unit covariance.
void CmaEsStrategy::start_run(bool random_mean) {
  const double n = static_cast<double>(n_);
  // Active CMA (Hansen 2016, as the cmaes package): positive weights for the best half, negative
  // ones for the rest (sep-CMA: positive only).
  mu_ = lambda_ / 2;
  std::vector<double> prime(static_cast<std::size_t>(lambda_));
  for (int i = 0; i < lambda_; ++i)
    prime[static_cast<std::size_t>(i)] = std::log((lambda_ + 1) / 2.0) - std::log(i + 1.0);
  auto effective = [&](int from, int to) {
    double sum = 0, squares = 0;
    for (int i = from; i < to; ++i)
      sum += prime[static_cast<std::size_t>(i)],
          squares += prime[static_cast<std::size_t>(i)] * prime[static_cast<std::size_t>(i)];
    return squares > 0 ? sum * sum / squares : 0.0;
  };
  mu_eff_ = effective(0, mu_);
  const double mu_eff_minus = effective(mu_, lambda_);
  c_1_ = 2 / ((n + 1.3) * (n + 1.3) + mu_eff_);
  c_mu_ = std::min(1 - c_1_ - 1e-8, 2 * (mu_eff_ - 2 + 1 / mu_eff_) / ((n + 2) * (n + 2) + mu_eff_));
  if (separable_) {  // sep-CMA learns a diagonal (n + 2) / 3 times faster
    c_1_ = std::min(1.0, c_1_ * (n + 2) / 3);
    c_mu_ = std::min(1 - c_1_ - 1e-8, c_mu_ * (n + 2) / 3);
  }
  const double min_alpha =
      std::min({1 + c_1_ / c_mu_, 1 + 2 * mu_eff_minus / (mu_eff_ + 2), (1 - c_1_ - c_mu_) / (n * c_mu_)});
  double positive = 0, negative = 0;
  for (double w : prime) (w >= 0 ? positive : negative) += std::abs(w);
  weights_.resize(prime.size());
  for (std::size_t i = 0; i < prime.size(); ++i) {
    weights_[i] =
        prime[i] >= 0 ? prime[i] / positive : (separable_ || negative <= 0 ? 0.0 : min_alpha / negative * prime[i]);
  }
  c_sigma_ = (mu_eff_ + 2) / (n + mu_eff_ + 5);
  d_sigma_ = 1 + 2 * std::max(0.0, std::sqrt((mu_eff_ - 1) / (n + 1)) - 1) + c_sigma_;
  c_c_ = (4 + mu_eff_ / n) / (n + 4 + 2 * mu_eff_ / n);
  chi_n_ = std::sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n));
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  mean_.assign(n_, 0.5);
  if (random_mean) {
    for (double& m : mean_) m = u01(rng_);
  }
  sigma_ = options_.sigma();
  p_sigma_.assign(n_, 0.0);
  p_c_.assign(n_, 0.0);
  cov_.assign(separable_ ? n_ : n_ * n_, 0.0);
  for (std::size_t i = 0; i < n_; ++i) cov_[separable_ ? i : i * n_ + i] = 1.0;
  generation_ = 0;
  best_history_.clear();
  pending_.clear();
  mirror_.clear();
  told_.clear();
  decompose();
}

// C^{-1/2} v = B D^{-1} B^T v.
std::vector<double> CmaEsStrategy::inverse_sqrt_times(const std::vector<double>& v) const {
  std::vector<double> out(n_, 0.0);
  if (separable_) {
    for (std::size_t k = 0; k < n_; ++k) out[k] = v[k] / std::sqrt(eigen_values_[k]);
    return out;
  }
  std::vector<double> t(n_, 0.0);
  for (std::size_t j = 0; j < n_; ++j) {
    for (std::size_t k = 0; k < n_; ++k) t[j] += eigen_vectors_[k * n_ + j] * v[k];
    t[j] /= std::sqrt(eigen_values_[j]);
  }
  for (std::size_t k = 0; k < n_; ++k) {
    for (std::size_t j = 0; j < n_; ++j) out[k] += eigen_vectors_[k * n_ + j] * t[j];
  }
  return out;
}

void CmaEsStrategy::decompose() {
  if (separable_) {
    eigen_values_ = cov_;
    return;
  }
  symmetric_eigen(cov_, n_, eigen_values_, eigen_vectors_);
  for (double& v : eigen_values_) v = std::max(v, 1e-300);
}

std::optional<nlohmann::json> CmaEsStrategy::suggest() {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> z(n_), y(n_), x(n_);
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (!mirror_.empty() && attempt == 0) {
      for (std::size_t i = 0; i < n_; ++i) z[i] = -mirror_[i];
      mirror_.clear();
    } else {
      for (double& v : z) v = normal(rng_);
      mirror_ = z;
    }
    for (std::size_t i = 0; i < n_; ++i) {  // y = B D z
      if (separable_) {
        y[i] = std::sqrt(eigen_values_[i]) * z[i];
        continue;
      }
      double s = 0;
      for (std::size_t j = 0; j < n_; ++j) s += eigen_vectors_[i * n_ + j] * std::sqrt(eigen_values_[j]) * z[j];
      y[i] = s;
    }
    bool inside = true;
    for (std::size_t i = 0; i < n_; ++i) {
      x[i] = mean_[i] + sigma_ * y[i];
      inside = inside && x[i] >= 0 && x[i] <= 1;
    }
    if (inside) break;
  }
  for (std::size_t i = 0; i < n_; ++i) {  // still outside after 100 draws: clipped (as the cmaes package)
    x[i] = std::clamp(x[i], 0.0, 1.0);
    y[i] = (x[i] - mean_[i]) / sigma_;
  }
  const auto& dims = space_.dimensions();
  nlohmann::json out = space_.sample(rng_);  // the choices: drawn at random
  for (std::size_t i = 0; i < n_; ++i) {
    const auto& d = dims[numeric_[i]];
    const auto [lo, hi] = coordinates::range_of(d);
    out[d.name] = coordinates::value_of(d, lo + x[i] * (hi - lo));
  }
  pending_[out.dump()] = y;
  return out;
}

void CmaEsStrategy::observe(const Trial& trial) {
  const auto it = pending_.find(trial.parameters.dump());
  if (it == pending_.end()) return;  // another generation's, or not ours
  std::vector<double> y = std::move(it->second);
  pending_.erase(it);
  if (trial.status != TrialStatus::kTrained || !trial.metrics.final || !std::isfinite(*trial.metrics.final)) return;
  told_.emplace_back(maximize_ ? -*trial.metrics.final : *trial.metrics.final, std::move(y));
  if (static_cast<int>(told_.size()) >= lambda_) tell();
}

// One generation's update from the best mu of its lambda candidates.
void CmaEsStrategy::tell() {
  std::sort(told_.begin(), told_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<double> y_w(n_, 0.0);
  for (int i = 0; i < mu_; ++i) {
    for (std::size_t k = 0; k < n_; ++k)
      y_w[k] += weights_[static_cast<std::size_t>(i)] * told_[static_cast<std::size_t>(i)].second[k];
  }
  for (std::size_t k = 0; k < n_; ++k) mean_[k] += sigma_ * y_w[k];
  const std::vector<double> c_half = inverse_sqrt_times(y_w);
  const double ps_scale = std::sqrt(c_sigma_ * (2 - c_sigma_) * mu_eff_);
  double ps_norm = 0;
  for (std::size_t k = 0; k < n_; ++k) {
    p_sigma_[k] = (1 - c_sigma_) * p_sigma_[k] + ps_scale * c_half[k];
    ps_norm += p_sigma_[k] * p_sigma_[k];
  }
  ps_norm = std::sqrt(ps_norm);
  ++generation_;
  const double decay = 1 - std::pow(1 - c_sigma_, 2.0 * static_cast<double>(generation_));
  const bool h_sigma =
      ps_norm / std::sqrt(std::max(decay, 1e-300)) < (1.4 + 2 / (static_cast<double>(n_) + 1)) * chi_n_;
  const double pc_scale = h_sigma ? std::sqrt(c_c_ * (2 - c_c_) * mu_eff_) : 0.0;
  for (std::size_t k = 0; k < n_; ++k) p_c_[k] = (1 - c_c_) * p_c_[k] + pc_scale * y_w[k];
  // The rank-mu update over all lambda: a negative weight scaled by d / |C^{-1/2} y|^2.
  std::vector<double> w_io(told_.size());
  double weight_sum = 0;
  for (std::size_t i = 0; i < told_.size(); ++i) {
    weight_sum += weights_[i];
    w_io[i] = weights_[i];
    if (weights_[i] < 0) {
      double norm = 0;
      for (double v : inverse_sqrt_times(told_[i].second)) norm += v * v;
      w_io[i] *= static_cast<double>(n_) / (norm + 1e-8);
    }
  }
  const double delta_h = h_sigma ? 0.0 : c_c_ * (2 - c_c_);
  const double keep = 1 + c_1_ * delta_h - c_1_ - c_mu_ * weight_sum;
  for (std::size_t a = 0; a < n_; ++a) {
    for (std::size_t b = separable_ ? a : 0; b < (separable_ ? a + 1 : n_); ++b) {
      double rank_mu = 0;
      for (std::size_t i = 0; i < told_.size(); ++i) rank_mu += w_io[i] * told_[i].second[a] * told_[i].second[b];
      double& c = cov_[separable_ ? a : a * n_ + b];
      c = keep * c + c_1_ * p_c_[a] * p_c_[b] + c_mu_ * rank_mu;
    }
  }
  sigma_ = std::min(sigma_ * std::exp((c_sigma_ / d_sigma_) * (ps_norm / chi_n_ - 1)), 1e32);
  best_history_.push_back(told_.front().first);
  told_.clear();
  pending_.clear();  // the rest of this generation is not told
  mirror_.clear();
  decompose();
  if (options_.restarts() && converged()) {
    lambda_ *= 2;
    ++restarts_;
    start_run(true);
  }
}

// The cmaes package's stopping tests: the steps below 1e-11 of the range, the best values of the
// last 10 + 30 d / lambda generations flat within 1e-12, or a covariance conditioned past 1e14.
bool CmaEsStrategy::converged() const {
  double largest = 0, smallest = 1e300;
  for (double v : eigen_values_) {
    largest = std::max(largest, v);
    smallest = std::min(smallest, v);
  }
  if (sigma_ * std::sqrt(largest) < 1e-11) return true;
  if (largest / smallest > 1e14) return true;
  const auto window = static_cast<std::size_t>(10 + std::ceil(30.0 * static_cast<double>(n_) / lambda_));
  if (best_history_.size() >= window) {
    const auto begin = best_history_.end() - static_cast<std::ptrdiff_t>(window);
    const auto [lo, hi] = std::minmax_element(begin, best_history_.end());
    if (*hi - *lo < 1e-12) return true;
  }
  return false;
}

}  // namespace baton
