#include "baton/exec/cmaes.h"

#include <algorithm>
#include <cmath>
#include <memory>
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

struct CmaEsStrategy::Impl {
  SearchSpace space_;
  std::mt19937_64 rng_;
  bool maximize_;
  CmaEsOptions options_;
  std::vector<std::size_t> numeric_;  // the space's numeric dimensions
  std::size_t n_ = 0;
  bool separable_ = false;
  // The distribution, in [0, 1]^n.
  int lambda_ = 0, mu_ = 0;
  std::vector<double> weights_;
  double mu_eff_ = 0, c_sigma_ = 0, d_sigma_ = 0, c_c_ = 0, c_1_ = 0, c_mu_ = 0, chi_n_ = 0;
  std::vector<double> mean_, p_sigma_, p_c_, cov_, eigen_vectors_, eigen_values_;  // cov: n x n (diagonal: n)
  double sigma_ = 0;
  int64_t generation_ = 0;  // within the run
  int restarts_ = 0;
  std::vector<double> best_history_;  // each generation's best value (this run)
  // Suggested candidates of the current generation by their parameters: their y = (x - mean) / sigma.
  std::map<std::string, std::vector<double>> pending_;
  std::vector<double> mirror_;
  std::vector<std::pair<double, std::vector<double>>> told_;  // (loss, y) this generation
};

CmaEsStrategy::~CmaEsStrategy() = default;

int CmaEsStrategy::restarts() const { return impl_->restarts_; }

CmaEsStrategy::CmaEsStrategy(SearchSpace space, uint64_t seed, bool maximize, CmaEsOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->space_ = std::move(space);
  impl_->rng_.seed(seed);
  impl_->maximize_ = maximize;
  impl_->options_ = options;
  const auto& dims = impl_->space_.dimensions();
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (dims[k].type != "choice") impl_->numeric_.push_back(k);
  }
  if (impl_->numeric_.empty()) {
    throw std::invalid_argument(
        "strategy cmaes: the space has only choices, and CMA-ES searches numbers (its choices are drawn at random); "
        "use tpe, evolution or grid");
  }
  if (impl_->options_.population() < 0 || impl_->options_.population() > 100000 ||
      !(impl_->options_.sigma() > 0 && impl_->options_.sigma() <= 1) || impl_->options_.separable_above() < 1)
    throw std::invalid_argument("cmaes: population must be 0 (default) or more, sigma in (0, 1], separable_above >= 1");
  impl_->n_ = impl_->numeric_.size();
  impl_->separable_ = static_cast<int>(impl_->n_) > impl_->options_.separable_above();
  impl_->lambda_ = impl_->options_.population() > 0
                       ? impl_->options_.population()
                       : 4 + static_cast<int>(std::floor(3 * std::log(static_cast<double>(impl_->n_))));
  impl_->lambda_ = std::max(impl_->lambda_, 2);
  start_run(false);
}

// A run: the weights and learning rates for the population, the mean (the middle of the space, or
// at random on a restart), the step, a unit covariance.
void CmaEsStrategy::start_run(bool random_mean) {
  const double n = static_cast<double>(impl_->n_);
  // Active CMA (Hansen 2016, as the cmaes package): positive weights for the best half, negative
  // ones for the rest (sep-CMA: positive only).
  impl_->mu_ = impl_->lambda_ / 2;
  std::vector<double> prime(static_cast<std::size_t>(impl_->lambda_));
  for (int i = 0; i < impl_->lambda_; ++i)
    prime[static_cast<std::size_t>(i)] = std::log((impl_->lambda_ + 1) / 2.0) - std::log(i + 1.0);
  auto effective = [&](int from, int to) {
    double sum = 0, squares = 0;
    for (int i = from; i < to; ++i)
      sum += prime[static_cast<std::size_t>(i)],
          squares += prime[static_cast<std::size_t>(i)] * prime[static_cast<std::size_t>(i)];
    return squares > 0 ? sum * sum / squares : 0.0;
  };
  impl_->mu_eff_ = effective(0, impl_->mu_);
  const double mu_eff_minus = effective(impl_->mu_, impl_->lambda_);
  impl_->c_1_ = 2 / ((n + 1.3) * (n + 1.3) + impl_->mu_eff_);
  impl_->c_mu_ = std::min(1 - impl_->c_1_ - 1e-8,
                          2 * (impl_->mu_eff_ - 2 + 1 / impl_->mu_eff_) / ((n + 2) * (n + 2) + impl_->mu_eff_));
  if (impl_->separable_) {  // sep-CMA learns a diagonal (n + 2) / 3 times faster
    impl_->c_1_ = std::min(1.0, impl_->c_1_ * (n + 2) / 3);
    impl_->c_mu_ = std::min(1 - impl_->c_1_ - 1e-8, impl_->c_mu_ * (n + 2) / 3);
  }
  const double min_alpha = std::min({1 + impl_->c_1_ / impl_->c_mu_, 1 + 2 * mu_eff_minus / (impl_->mu_eff_ + 2),
                                     (1 - impl_->c_1_ - impl_->c_mu_) / (n * impl_->c_mu_)});
  double positive = 0, negative = 0;
  for (double w : prime) (w >= 0 ? positive : negative) += std::abs(w);
  impl_->weights_.resize(prime.size());
  for (std::size_t i = 0; i < prime.size(); ++i) {
    impl_->weights_[i] = prime[i] >= 0 ? prime[i] / positive
                                       : (impl_->separable_ || negative <= 0 ? 0.0 : min_alpha / negative * prime[i]);
  }
  impl_->c_sigma_ = (impl_->mu_eff_ + 2) / (n + impl_->mu_eff_ + 5);
  impl_->d_sigma_ = 1 + 2 * std::max(0.0, std::sqrt((impl_->mu_eff_ - 1) / (n + 1)) - 1) + impl_->c_sigma_;
  impl_->c_c_ = (4 + impl_->mu_eff_ / n) / (n + 4 + 2 * impl_->mu_eff_ / n);
  impl_->chi_n_ = std::sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n));
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  impl_->mean_.assign(impl_->n_, 0.5);
  if (random_mean) {
    for (double& m : impl_->mean_) m = u01(impl_->rng_);
  }
  impl_->sigma_ = impl_->options_.sigma();
  impl_->p_sigma_.assign(impl_->n_, 0.0);
  impl_->p_c_.assign(impl_->n_, 0.0);
  impl_->cov_.assign(impl_->separable_ ? impl_->n_ : impl_->n_ * impl_->n_, 0.0);
  for (std::size_t i = 0; i < impl_->n_; ++i) impl_->cov_[impl_->separable_ ? i : i * impl_->n_ + i] = 1.0;
  impl_->generation_ = 0;
  impl_->best_history_.clear();
  impl_->pending_.clear();
  impl_->mirror_.clear();
  impl_->told_.clear();
  decompose();
}

// C^{-1/2} v = B D^{-1} B^T v.
std::vector<double> CmaEsStrategy::inverse_sqrt_times(const std::vector<double>& v) const {
  std::vector<double> out(impl_->n_, 0.0);
  if (impl_->separable_) {
    for (std::size_t k = 0; k < impl_->n_; ++k) out[k] = v[k] / std::sqrt(impl_->eigen_values_[k]);
    return out;
  }
  std::vector<double> t(impl_->n_, 0.0);
  for (std::size_t j = 0; j < impl_->n_; ++j) {
    for (std::size_t k = 0; k < impl_->n_; ++k) t[j] += impl_->eigen_vectors_[k * impl_->n_ + j] * v[k];
    t[j] /= std::sqrt(impl_->eigen_values_[j]);
  }
  for (std::size_t k = 0; k < impl_->n_; ++k) {
    for (std::size_t j = 0; j < impl_->n_; ++j) out[k] += impl_->eigen_vectors_[k * impl_->n_ + j] * t[j];
  }
  return out;
}

void CmaEsStrategy::decompose() {
  if (impl_->separable_) {
    impl_->eigen_values_ = impl_->cov_;
    return;
  }
  symmetric_eigen(impl_->cov_, impl_->n_, impl_->eigen_values_, impl_->eigen_vectors_);
  for (double& v : impl_->eigen_values_) v = std::max(v, 1e-300);
}

std::optional<nlohmann::json> CmaEsStrategy::suggest() {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> z(impl_->n_), y(impl_->n_), x(impl_->n_);
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (!impl_->mirror_.empty() && attempt == 0) {
      for (std::size_t i = 0; i < impl_->n_; ++i) z[i] = -impl_->mirror_[i];
      impl_->mirror_.clear();
    } else {
      for (double& v : z) v = normal(impl_->rng_);
      impl_->mirror_ = z;
    }
    for (std::size_t i = 0; i < impl_->n_; ++i) {  // y = B D z
      if (impl_->separable_) {
        y[i] = std::sqrt(impl_->eigen_values_[i]) * z[i];
        continue;
      }
      double s = 0;
      for (std::size_t j = 0; j < impl_->n_; ++j)
        s += impl_->eigen_vectors_[i * impl_->n_ + j] * std::sqrt(impl_->eigen_values_[j]) * z[j];
      y[i] = s;
    }
    bool inside = true;
    for (std::size_t i = 0; i < impl_->n_; ++i) {
      x[i] = impl_->mean_[i] + impl_->sigma_ * y[i];
      inside = inside && x[i] >= 0 && x[i] <= 1;
    }
    if (inside) break;
  }
  for (std::size_t i = 0; i < impl_->n_; ++i) {  // still outside after 100 draws: clipped (as the cmaes package)
    x[i] = std::clamp(x[i], 0.0, 1.0);
    y[i] = (x[i] - impl_->mean_[i]) / impl_->sigma_;
  }
  const auto& dims = impl_->space_.dimensions();
  nlohmann::json out = impl_->space_.sample(impl_->rng_);  // the choices: drawn at random
  for (std::size_t i = 0; i < impl_->n_; ++i) {
    const auto& d = dims[impl_->numeric_[i]];
    const auto [lo, hi] = coordinates::range_of(d);
    out[d.name] = coordinates::value_of(d, lo + x[i] * (hi - lo));
  }
  impl_->pending_[out.dump()] = y;
  return out;
}

void CmaEsStrategy::observe(const Trial& trial) {
  const auto it = impl_->pending_.find(trial.parameters.dump());
  if (it == impl_->pending_.end()) return;  // another generation's, or not ours
  std::vector<double> y = std::move(it->second);
  impl_->pending_.erase(it);
  if (trial.status != TrialStatus::kTrained || !trial.metrics.final || !std::isfinite(*trial.metrics.final)) return;
  impl_->told_.emplace_back(impl_->maximize_ ? -*trial.metrics.final : *trial.metrics.final, std::move(y));
  if (static_cast<int>(impl_->told_.size()) >= impl_->lambda_) tell();
}

// One generation's update from the best mu of its lambda candidates.
void CmaEsStrategy::tell() {
  std::sort(impl_->told_.begin(), impl_->told_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<double> y_w(impl_->n_, 0.0);
  for (int i = 0; i < impl_->mu_; ++i) {
    for (std::size_t k = 0; k < impl_->n_; ++k)
      y_w[k] += impl_->weights_[static_cast<std::size_t>(i)] * impl_->told_[static_cast<std::size_t>(i)].second[k];
  }
  for (std::size_t k = 0; k < impl_->n_; ++k) impl_->mean_[k] += impl_->sigma_ * y_w[k];
  const std::vector<double> c_half = inverse_sqrt_times(y_w);
  const double ps_scale = std::sqrt(impl_->c_sigma_ * (2 - impl_->c_sigma_) * impl_->mu_eff_);
  double ps_norm = 0;
  for (std::size_t k = 0; k < impl_->n_; ++k) {
    impl_->p_sigma_[k] = (1 - impl_->c_sigma_) * impl_->p_sigma_[k] + ps_scale * c_half[k];
    ps_norm += impl_->p_sigma_[k] * impl_->p_sigma_[k];
  }
  ps_norm = std::sqrt(ps_norm);
  ++impl_->generation_;
  const double decay = 1 - std::pow(1 - impl_->c_sigma_, 2.0 * static_cast<double>(impl_->generation_));
  const bool h_sigma =
      ps_norm / std::sqrt(std::max(decay, 1e-300)) < (1.4 + 2 / (static_cast<double>(impl_->n_) + 1)) * impl_->chi_n_;
  const double pc_scale = h_sigma ? std::sqrt(impl_->c_c_ * (2 - impl_->c_c_) * impl_->mu_eff_) : 0.0;
  for (std::size_t k = 0; k < impl_->n_; ++k) impl_->p_c_[k] = (1 - impl_->c_c_) * impl_->p_c_[k] + pc_scale * y_w[k];
  // The rank-mu update over all lambda: a negative weight scaled by d / |C^{-1/2} y|^2.
  std::vector<double> w_io(impl_->told_.size());
  double weight_sum = 0;
  for (std::size_t i = 0; i < impl_->told_.size(); ++i) {
    weight_sum += impl_->weights_[i];
    w_io[i] = impl_->weights_[i];
    if (impl_->weights_[i] < 0) {
      double norm = 0;
      for (double v : inverse_sqrt_times(impl_->told_[i].second)) norm += v * v;
      w_io[i] *= static_cast<double>(impl_->n_) / (norm + 1e-8);
    }
  }
  const double delta_h = h_sigma ? 0.0 : impl_->c_c_ * (2 - impl_->c_c_);
  const double keep = 1 + impl_->c_1_ * delta_h - impl_->c_1_ - impl_->c_mu_ * weight_sum;
  for (std::size_t a = 0; a < impl_->n_; ++a) {
    for (std::size_t b = impl_->separable_ ? a : 0; b < (impl_->separable_ ? a + 1 : impl_->n_); ++b) {
      double rank_mu = 0;
      for (std::size_t i = 0; i < impl_->told_.size(); ++i)
        rank_mu += w_io[i] * impl_->told_[i].second[a] * impl_->told_[i].second[b];
      double& c = impl_->cov_[impl_->separable_ ? a : a * impl_->n_ + b];
      c = keep * c + impl_->c_1_ * impl_->p_c_[a] * impl_->p_c_[b] + impl_->c_mu_ * rank_mu;
    }
  }
  impl_->sigma_ =
      std::min(impl_->sigma_ * std::exp((impl_->c_sigma_ / impl_->d_sigma_) * (ps_norm / impl_->chi_n_ - 1)), 1e32);
  impl_->best_history_.push_back(impl_->told_.front().first);
  impl_->told_.clear();
  impl_->pending_.clear();  // the rest of this generation is not told
  impl_->mirror_.clear();
  decompose();
  if (impl_->options_.restarts() && converged()) {
    impl_->lambda_ *= 2;
    ++impl_->restarts_;
    start_run(true);
  }
}

// The cmaes package's stopping tests: the steps below 1e-11 of the range, the best values of the
// last 10 + 30 d / lambda generations flat within 1e-12, or a covariance conditioned past 1e14.
bool CmaEsStrategy::converged() const {
  double largest = 0, smallest = 1e300;
  for (double v : impl_->eigen_values_) {
    largest = std::max(largest, v);
    smallest = std::min(smallest, v);
  }
  if (impl_->sigma_ * std::sqrt(largest) < 1e-11) return true;
  if (largest / smallest > 1e14) return true;
  const auto window = static_cast<std::size_t>(10 + std::ceil(30.0 * static_cast<double>(impl_->n_) / impl_->lambda_));
  if (impl_->best_history_.size() >= window) {
    const auto begin = impl_->best_history_.end() - static_cast<std::ptrdiff_t>(window);
    const auto [lo, hi] = std::minmax_element(begin, impl_->best_history_.end());
    if (*hi - *lo < 1e-12) return true;
  }
  return false;
}

}  // namespace baton
