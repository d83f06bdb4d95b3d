// The Gaussian process behind the gp strategy (exec/gp.cpp): a Matérn-5/2 kernel with a length
// scale per dimension (a choice's distance is 0 or 1), its hyper-parameters fitted by the largest
// marginal likelihood times a weak prior (L-BFGS on their logs, gradients in closed form), and log
// expected improvement with its gradient. Plain C++ on small dense matrices (n up to a few
// hundred trials): no LibTorch in the strategy's hot loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace baton::gp_model {

// The dot product of n doubles.
double dot(const double* a, const double* b, std::size_t n);

// The hyper-parameters: each inverse squared length scale, the kernel's scale and the noise. The
// raw ones the fit works on are their logs (the noise's: of its excess over a floor of 1e-8).
struct Hyper {
  std::vector<double> ils;
  double scale, noise;
  static Hyper from_raw(const std::vector<double>& raw, std::size_t d);
};

struct Gp {
  std::size_t n = 0, d = 0;
  std::vector<double> x;                   // n x d, numeric in [0, 1], a choice as its index
  std::vector<double> y;                   // standardised: lower is better
  std::vector<unsigned char> categorical;  // bytes, not std::vector<bool>'s bits: read in every distance
  Hyper h{};
  std::vector<double> l, alpha;  // the Cholesky factor of K + noise I, and (K + noise I)^-1 y
  std::vector<double> deltas;    // per pair i > j (row-major lower triangle) and dimension: delta2

  void prepare();  // after x is set: the pairs' squared differences, computed once per fit
  double delta2(const double* a, const double* b, std::size_t k) const {
    if (categorical[k] != 0) return a[k] == b[k] ? 0.0 : 1.0;
    const double t = a[k] - b[k];
    return t * t;
  }
  double distance2(const double* a, const double* b, const Hyper& with) const {
    double s = 0;
    for (std::size_t k = 0; k < d; ++k) s += with.ils[k] * delta2(a, b, k);
    return s;
  }
  double pair_distance2(std::size_t pair, const Hyper& with) const {
    double s = 0;
    for (std::size_t k = 0; k < d; ++k) s += with.ils[k] * deltas[pair * d + k];
    return s;
  }
  // K + noise I; with `slopes`, also each pair's d matern52 / d distance2 (for the gradient).
  std::vector<double> covariance(const Hyper& with, std::vector<double>* slopes = nullptr) const;
  // The log marginal likelihood plus the log prior (weak priors on the length scales, the scale
  // and the noise, as Optuna's), and its gradient with respect to the raw parameters. -inf when the
  // covariance is not positive definite.
  double log_posterior(const std::vector<double>& raw, std::vector<double>* grad) const;
  // Fixes the hyper-parameters and factors the covariance (more jitter when it must); false when
  // even that fails.
  bool condition(const std::vector<double>& raw);
  // The posterior mean and standard deviation of f at `at` (after condition); with `dmean` and
  // `dsd` (d entries each, both or neither), also their gradients with respect to `at`'s numeric
  // coordinates (a choice's: 0).
  std::pair<double, double> posterior(const double* at, double* dmean = nullptr, double* dsd = nullptr) const;
  // The mean and standard deviation at `m` points (`at`: m x d) into `mean` and `sd`.
  void posteriors(const double* at, std::size_t m, double* mean, double* sd) const;
};

// The raw hyper-parameters for `gp`: from `last` (the previous fit's, empty at the first); from the
// defaults too at the first and every 10th fit (the better of the two), so that a poor local
// optimum is left.
std::vector<double> fit(const Gp& gp, const std::vector<double>& last, int64_t fit_number);

// log(phi(z) + z Phi(z)): the log of the expected improvement of a unit Gaussian, accurate far
// into the tail, and its derivative.
double log_h(double z);
double log_h_slope(double z);

// log Phi(z), accurate far into the lower tail, and its derivative phi(z) / Phi(z).
double log_normal_cdf(double z);
double log_normal_cdf_slope(double z);

// The acquisition: log expected improvement over `best` (a standardised loss: lower is better).
// With constraints (Gardner et al. 2014, as Optuna's GPSampler): each constraint's GP of its
// standardised margin, feasible at or below its threshold, adds log P(feasible); without a
// feasible trial yet (`ei` false) only those count.
struct LogEi {
  const Gp& gp;
  double best;
  std::vector<std::pair<const Gp*, double>> constraints{};
  bool ei = true;
  double operator()(const double* u) const;
  // The values at `m` points (`points`: m x d) into `out`.
  void operator()(const double* points, std::size_t m, double* out) const;
  // The value, and its gradient in `grad` (d entries).
  double operator()(const double* u, double* grad) const;
  // The value where the posterior is N(mean, sd^2).
  double at(double mean, double sd) const;
};

}  // namespace baton::gp_model
