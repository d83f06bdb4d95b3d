#include "gp_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace baton::gp_model {
namespace {

// The noise variance's floor (the losses standardised). Optuna's is 1e-6; with it a deterministic
// loss cannot be resolved closer than about 1e-3 of its spread, and branin's best after 60 trials
// stayed 3e-5 above the optimum. 1e-8: better at 60 trials on 173-180 of 200 held-out seeds
// (branin), 112-132 (hartmann6); at 30 trials behind on 53% of seeds by little; on a noisy
// hartmann6 no change (the fitted noise is far above the floor).
constexpr double kMinNoise = 1e-8;
// The prior on each inverse squared length scale r: log p = -(kLongScale / r + kShortScale * r),
// its mode at r = sqrt(kLongScale / kShortScale) = 2.2 (a length scale of 0.67 of the range).
// Optuna's GPSampler uses 0.1 and 0.1 (mode at 1); a stronger penalty on long length scales keeps
// the model from being sure of a smooth trend after few trials: on 200 seeds never used to choose
// it, hartmann6's seeds still above -3.0 after 30 trials 76 against 95, mixed's above 0.05 3 against 22.
constexpr double kLongScale = 0.5, kShortScale = 0.1;
// The raw hyper-parameters' bounds (logs): [-12, 12], and down to -25 for the noise (e^-25 above
// kMinNoise: the floor itself; at -12 it was 6e-6 above it, and branin's best after 60 trials 4x
// further from the optimum: the model could not resolve the last digits).
constexpr double kRawUpper = 12.0;
double raw_lower(std::size_t j, std::size_t count) { return j + 1 == count ? -25.0 : -12.0; }

// ---- small dense linear algebra (row-major, n <= a few hundred) ---------------------------------

// In place: the lower Cholesky factor of the symmetric positive definite `a` (n x n) in its lower
// triangle (the upper one, above the diagonal, is left as it was); false when it is not positive
// definite.
bool cholesky(std::vector<double>& a, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    const double* row_j = &a[j * n];
    const double s = a[j * n + j] - dot(row_j, row_j, j);
    if (!(s > 0)) return false;
    const double l = std::sqrt(s);
    a[j * n + j] = l;
    for (std::size_t i = j + 1; i < n; ++i) a[i * n + j] = (a[i * n + j] - dot(&a[i * n], row_j, j)) / l;
  }
  return true;
}

void solve_lower(const std::vector<double>& l, std::size_t n, std::vector<double>& b) {  // L x = b
  for (std::size_t i = 0; i < n; ++i) b[i] = (b[i] - dot(&l[i * n], b.data(), i)) / l[i * n + i];
}

void solve_upper(const std::vector<double>& l, std::size_t n, std::vector<double>& b) {  // L^T x = b
  for (std::size_t i = n; i-- > 0;) {
    double s = b[i];
    for (std::size_t k = i + 1; k < n; ++k) s -= l[k * n + i] * b[k];
    b[i] = s / l[i * n + i];
  }
}

// ---- the kernel -----------------------------------------------------------------------------

double matern52(double d2) {
  const double r = std::sqrt(5.0 * d2);
  return std::exp(-r) * (5.0 / 3.0 * d2 + r + 1.0);
}
// matern52 and its slope d matern52 / d d2, from one exponential.
std::pair<double, double> matern52_and_slope(double d2) {
  const double r = std::sqrt(5.0 * d2), e = std::exp(-r);
  return {e * (5.0 / 3.0 * d2 + r + 1.0), -5.0 / 6.0 * (r + 1.0) * e};
}

}  // namespace

// In four partial sums: independent chains the compiler can keep in vector registers (the O(n^3)
// and O(n^2) loops here are all dot products of contiguous rows).
double dot(const double* a, const double* b, std::size_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += a[k] * b[k];
    s1 += a[k + 1] * b[k + 1];
    s2 += a[k + 2] * b[k + 2];
    s3 += a[k + 3] * b[k + 3];
  }
  for (; k < n; ++k) s0 += a[k] * b[k];
  return (s0 + s1) + (s2 + s3);
}

Hyper Hyper::from_raw(const std::vector<double>& raw, std::size_t d) {
  Hyper h{std::vector<double>(d), std::exp(raw[d]), kMinNoise + std::exp(raw[d + 1])};
  for (std::size_t k = 0; k < d; ++k) h.ils[k] = std::exp(raw[k]);
  return h;
}

// ---- the GP ---------------------------------------------------------------------------------

void Gp::prepare() {
  deltas.resize(n * (n - 1) / 2 * d);
  std::size_t at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      for (std::size_t k = 0; k < d; ++k) deltas[at++] = delta2(&x[i * d], &x[j * d], k);
    }
  }
}

std::vector<double> Gp::covariance(const Hyper& with, std::vector<double>* slopes) const {
  std::vector<double> c(n * n);
  if (slopes != nullptr) slopes->resize(n * (n - 1) / 2);
  std::size_t pair = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < i; ++j, ++pair) {
      const auto [value, slope] = matern52_and_slope(pair_distance2(pair, with));
      c[i * n + j] = c[j * n + i] = with.scale * value;
      if (slopes != nullptr) (*slopes)[pair] = slope;
    }
    c[i * n + i] = with.scale + with.noise;
  }
  return c;
}

double Gp::log_posterior(const std::vector<double>& raw, std::vector<double>* grad) const {
  const Hyper with = Hyper::from_raw(raw, d);
  std::vector<double> slopes;
  std::vector<double> chol = covariance(with, grad != nullptr ? &slopes : nullptr);
  // The kernel's values stay in the upper triangle, which the factor leaves alone.
  if (!cholesky(chol, n)) return -std::numeric_limits<double>::infinity();
  std::vector<double> a = y;
  solve_lower(chol, n, a);
  double value = -0.5 * dot(a.data(), a.data(), n);
  for (std::size_t i = 0; i < n; ++i) value -= std::log(chol[i * n + i]);
  solve_upper(chol, n, a);  // a = K^-1 y
  for (std::size_t k = 0; k < d; ++k) value -= kLongScale / with.ils[k] + kShortScale * with.ils[k];
  value += (2.0 - 1.0) * std::log(with.scale) - with.scale;         // gamma(2, 1)
  value += (1.1 - 1.0) * std::log(with.noise) - 30.0 * with.noise;  // gamma(1.1, 30)
  if (grad == nullptr) return value;
  // W = a a^T - K^-1 (lower triangle); d value / d p = 0.5 tr(W dK/dp). K^-1 = L^-T L^-1, from
  // the columns of L^-1 (`inv_t`: row j is column j, so that every sum below runs along rows).
  std::vector<double> inv_t(n * n, 0.0);
  for (std::size_t j = 0; j < n; ++j) {
    double* col = &inv_t[j * n];
    col[j] = 1.0 / chol[j * n + j];
    for (std::size_t i = j + 1; i < n; ++i) col[i] = -dot(&chol[i * n + j], &col[j], i - j) / chol[i * n + i];
  }
  std::vector<double> w(n * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j <= i; ++j) w[i * n + j] = a[i] * a[j] - dot(&inv_t[i * n + i], &inv_t[j * n + i], n - i);
  }
  grad->assign(d + 2, 0.0);
  auto& g = *grad;
  std::size_t pair = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < i; ++j, ++pair) {  // (i, j) and (j, i): W and dK are symmetric
      const double wij = w[i * n + j];
      const double dm = with.scale * slopes[pair];
      for (std::size_t k = 0; k < d; ++k) g[k] += wij * dm * with.ils[k] * deltas[pair * d + k];
      g[d] += wij * chol[j * n + i];  // scale * matern52
    }
    g[d] += 0.5 * w[i * n + i] * with.scale;
    g[d + 1] += 0.5 * w[i * n + i] * (with.noise - kMinNoise);
  }
  for (std::size_t k = 0; k < d; ++k) g[k] += kLongScale / with.ils[k] - kShortScale * with.ils[k];
  g[d] += 1.0 - with.scale;
  g[d + 1] += (0.1 / with.noise - 30.0) * (with.noise - kMinNoise);
  return value;
}

bool Gp::condition(const std::vector<double>& raw) {
  h = Hyper::from_raw(raw, d);
  for (int attempt = 0; attempt < 6; ++attempt) {
    l = covariance(h);
    if (cholesky(l, n)) break;
    h.noise *= 10;
    if (attempt == 5) return false;
  }
  alpha = y;
  solve_lower(l, n, alpha);
  solve_upper(l, n, alpha);
  return true;
}

// The triangular solve runs across the points (row i of `k` holds trial i's covariances with all
// of them), which vectorises.
void Gp::posteriors(const double* at, std::size_t m, double* mean, double* sd) const {
  std::vector<double> k(n * m);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < m; ++c) k[i * m + c] = h.scale * matern52(distance2(&at[c * d], &x[i * d], h));
  }
  std::fill(mean, mean + m, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < m; ++c) mean[c] += alpha[i] * k[i * m + c];
  }
  std::vector<double> var(m, h.scale);
  for (std::size_t i = 0; i < n; ++i) {  // L v = k, then var = scale - |v|^2
    double* row = &k[i * m];
    for (std::size_t j = 0; j < i; ++j) {
      const double lij = l[i * n + j];
      const double* done = &k[j * m];
      for (std::size_t c = 0; c < m; ++c) row[c] -= lij * done[c];
    }
    const double lii = l[i * n + i];
    for (std::size_t c = 0; c < m; ++c) {
      row[c] /= lii;
      var[c] -= row[c] * row[c];
    }
  }
  for (std::size_t c = 0; c < m; ++c) sd[c] = std::sqrt(std::max(var[c], 1e-12));
}

// One point: the solve as dot products along the factor's rows (posteriors' loop across points
// would run once per row here). var = scale - k^T K^-1 k, so dvar = -2 (K^-1 k)^T dk.
std::pair<double, double> Gp::posterior(const double* at, double* dmean, double* dsd) const {
  std::vector<double> k(n), dk2(n);  // dk2: d k_i / d distance2
  for (std::size_t i = 0; i < n; ++i) {
    const auto [value, slope] = matern52_and_slope(distance2(at, &x[i * d], h));
    k[i] = h.scale * value;
    dk2[i] = h.scale * slope;
  }
  const double mean = dot(k.data(), alpha.data(), n);
  solve_lower(l, n, k);
  const double var = h.scale - dot(k.data(), k.data(), n);
  const double sd = std::sqrt(std::max(var, 1e-12));
  if (dmean == nullptr) return {mean, sd};
  solve_upper(l, n, k);  // K^-1 k
  for (std::size_t c = 0; c < d; ++c) {
    dmean[c] = dsd[c] = 0;
    if (categorical[c]) continue;
    double dm = 0, dv = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double dki = dk2[i] * h.ils[c] * 2.0 * (at[c] - x[i * d + c]);
      dm += alpha[i] * dki;
      dv -= 2.0 * k[i] * dki;
    }
    dmean[c] = dm;
    dsd[c] = var > 1e-12 ? dv / (2.0 * sd) : 0.0;
  }
  return {mean, sd};
}

// ---- fitting the hyper-parameters -----------------------------------------------------------

namespace {

// The gradient without its components that point out of the bounds at a parameter on them (as
// L-BFGS-B's projected gradient): the noise at its floor is converged, not still climbing (which
// kept every warm-started fit going for its 30 iterations).
void project(const std::vector<double>& p, std::vector<double>& g) {
  for (std::size_t j = 0; j < p.size(); ++j) {
    if ((p[j] <= raw_lower(j, p.size()) && g[j] < 0) || (p[j] >= kRawUpper && g[j] > 0)) g[j] = 0;
  }
}

// L-BFGS ascent (memory 6, backtracking line search) on the raw hyper-parameters. Kept whole: the
// two-loop recursion, the line search and the memory update read best as one algorithm.
std::vector<double> maximise(const Gp& gp, std::vector<double> p, int iterations) {
  const std::size_t m = p.size();
  std::vector<double> g, g_new;
  double f = gp.log_posterior(p, &g);
  project(p, g);
  if (!std::isfinite(f)) return p;
  std::vector<std::vector<double>> s_hist, y_hist;
  auto small = [](const std::vector<double>& grad) {  // Optuna's tolerance on the gradient
    return std::all_of(grad.begin(), grad.end(), [](double v) { return std::abs(v) < 1e-2; });
  };
  for (int it = 0; it < iterations && !small(g); ++it) {
    // Two-loop recursion on -f: the direction of ascent.
    std::vector<double> q = g;
    std::vector<double> alphas(s_hist.size());
    for (std::size_t i = s_hist.size(); i-- > 0;) {
      const double rho = 1.0 / std::inner_product(y_hist[i].begin(), y_hist[i].end(), s_hist[i].begin(), 0.0);
      alphas[i] = rho * std::inner_product(s_hist[i].begin(), s_hist[i].end(), q.begin(), 0.0);
      for (std::size_t j = 0; j < m; ++j) q[j] -= alphas[i] * y_hist[i][j];
    }
    if (!s_hist.empty()) {
      const auto& s = s_hist.back();
      const auto& yv = y_hist.back();
      const double gamma = std::inner_product(s.begin(), s.end(), yv.begin(), 0.0) /
                           std::inner_product(yv.begin(), yv.end(), yv.begin(), 0.0);
      for (double& v : q) v *= gamma;
    } else {
      const double norm = std::sqrt(std::inner_product(q.begin(), q.end(), q.begin(), 0.0));
      if (norm > 1.0)
        for (double& v : q) v /= norm;
    }
    for (std::size_t i = 0; i < s_hist.size(); ++i) {
      const double rho = 1.0 / std::inner_product(y_hist[i].begin(), y_hist[i].end(), s_hist[i].begin(), 0.0);
      const double beta = rho * std::inner_product(y_hist[i].begin(), y_hist[i].end(), q.begin(), 0.0);
      for (std::size_t j = 0; j < m; ++j) q[j] += s_hist[i][j] * (alphas[i] - beta);
    }
    const double slope = std::inner_product(q.begin(), q.end(), g.begin(), 0.0);
    if (!(slope > 0)) break;
    double t = 1.0, f_new = -std::numeric_limits<double>::infinity();
    std::vector<double> p_new(m);
    for (int back = 0; back < 20; ++back, t *= 0.5) {
      for (std::size_t j = 0; j < m; ++j) p_new[j] = std::clamp(p[j] + t * q[j], raw_lower(j, m), kRawUpper);
      f_new = gp.log_posterior(p_new, &g_new);
      project(p_new, g_new);
      if (std::isfinite(f_new) && f_new >= f + 1e-4 * t * slope) break;
    }
    if (!std::isfinite(f_new) || f_new < f) break;
    std::vector<double> s(m), yv(m);
    for (std::size_t j = 0; j < m; ++j) {
      s[j] = p_new[j] - p[j];
      yv[j] = g[j] - g_new[j];  // of -f
    }
    const double sy = std::inner_product(s.begin(), s.end(), yv.begin(), 0.0);
    p = p_new;
    const bool converged = f_new - f < 1e-7 * (1.0 + std::abs(f));
    f = f_new;
    g = g_new;
    if (converged) break;
    if (sy > 1e-12) {
      s_hist.push_back(s);
      y_hist.push_back(yv);
      if (s_hist.size() > 6) {
        s_hist.erase(s_hist.begin());
        y_hist.erase(y_hist.begin());
      }
    }
  }
  return p;
}

}  // namespace

std::vector<double> fit(const Gp& gp, const std::vector<double>& last, int64_t fit_number) {
  const std::size_t d = gp.d;
  std::vector<double> fitted;
  if (last.size() != d + 2 || fit_number % 10 == 0) {
    fitted.assign(d + 2, 0.0);
    fitted[d + 1] = std::log(1e-2);
    fitted = maximise(gp, fitted, 50);
  }
  if (last.size() == d + 2) {
    std::vector<double> again = maximise(gp, last, 30);
    if (fitted.empty() || gp.log_posterior(again, nullptr) > gp.log_posterior(fitted, nullptr)) fitted = again;
  }
  return fitted;
}

// ---- the acquisition ------------------------------------------------------------------------

namespace {

// Below this z, log_h comes from its asymptotic series: above it, phi(z) + z Phi(z) is computed
// as it is (a cancellation that costs about 3 of 16 digits at z = -20); below, phi(z) underflows
// from z = -38 on. The series to r^6 (r = 1/z^2) is good to 1e-12 there.
constexpr double kSeriesBelow = -20.0;
constexpr double kLogSqrt2Pi = 0.91893853320467274178;

// phi(z) + z Phi(z) and Phi(z), above kSeriesBelow.
std::pair<double, double> h_and_cdf(double z) {
  const double phi = std::exp(-0.5 * z * z - kLogSqrt2Pi);
  const double big_phi = 0.5 * std::erfc(-z / std::sqrt(2.0));
  return {std::max(phi + z * big_phi, 1e-300), big_phi};
}

// Below kSeriesBelow: h(z) = phi(z) r p(r), p(r) = 1 - 3 r + 15 r^2 - 105 r^3 + ... (odd
// double factorials), r = 1/z^2; returns p and dp/dr.
std::pair<double, double> series(double r) {
  double p = 0, dp = 0, term = 1;  // term: (-1)^k (2k+1)!! r^k
  for (int k = 0; k <= 6; ++k) {
    p += term;
    if (k > 0) dp += k * term / r;
    term *= -(2.0 * k + 3.0) * r;
  }
  return {p, dp};
}

}  // namespace

// The log of the expected improvement of a unit Gaussian, accurate far into the tail (so that the
// acquisition has a slope even where the improvement is hopeless).
double log_h(double z) {
  if (z > kSeriesBelow) return std::log(h_and_cdf(z).first);
  const double r = 1.0 / (z * z);
  return -0.5 * z * z - kLogSqrt2Pi + std::log(r * series(r).first);
}

// d log_h / dz = Phi(z) / h(z); below kSeriesBelow the derivative of the series'
// -z^2/2 + log r + log p(r), with dr/dz = -2/z^3.
double log_h_slope(double z) {
  if (z > kSeriesBelow) {
    const auto [h, cdf] = h_and_cdf(z);
    return cdf / h;
  }
  const double r = 1.0 / (z * z);
  const auto [p, dp] = series(r);
  return -z - 2.0 / z - 2.0 / (z * z * z) * dp / p;
}

double log_normal_cdf(double z) {
  if (z > -30) return std::log(0.5 * std::erfc(-z / std::sqrt(2.0)));
  return -0.5 * z * z - std::log(-z) - 0.5 * std::log(2 * M_PI);  // the tail's asymptote
}

double log_normal_cdf_slope(double z) {
  if (z > -30) return std::exp(-0.5 * z * z - 0.5 * std::log(2 * M_PI) - log_normal_cdf(z));
  return -z;
}

double LogEi::at(double mean, double sd) const { return ei ? std::log(sd) + log_h((best - mean) / sd) : 0.0; }

double LogEi::operator()(const double* u) const {
  double out = 0;
  (*this)(u, 1, &out);
  return out;
}

void LogEi::operator()(const double* points, std::size_t m, double* out) const {
  std::vector<double> mean(m), sd(m);
  gp.posteriors(points, m, mean.data(), sd.data());
  for (std::size_t c = 0; c < m; ++c) out[c] = at(mean[c], sd[c]);
  for (const auto& [model, threshold] : constraints) {
    model->posteriors(points, m, mean.data(), sd.data());
    for (std::size_t c = 0; c < m; ++c) out[c] += log_normal_cdf((threshold - mean[c]) / sd[c]);
  }
}

double LogEi::operator()(const double* u, double* grad) const {
  std::vector<double> dm(gp.d), ds(gp.d);
  const auto [m, s] = gp.posterior(u, dm.data(), ds.data());
  const double z = (best - m) / s, slope = log_h_slope(z);
  for (std::size_t k = 0; k < gp.d; ++k) grad[k] = ei ? ds[k] / s - slope * (dm[k] + z * ds[k]) / s : 0.0;
  double value = at(m, s);
  for (const auto& [model, threshold] : constraints) {
    const auto [cm, cs] = model->posterior(u, dm.data(), ds.data());
    const double cz = (threshold - cm) / cs, cslope = log_normal_cdf_slope(cz);
    for (std::size_t k = 0; k < gp.d; ++k) grad[k] += cslope * (-dm[k] - cz * ds[k]) / cs;
    value += log_normal_cdf(cz);
  }
  return value;
}

}  // namespace baton::gp_model
