#include "baton/exec/gp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "coordinates.h"

namespace baton {
namespace {

constexpr double kMinNoise = 1e-6;
// The prior on each inverse squared length scale r: log p = -(kLongScale / r + kShortScale * r),
// its mode at r = sqrt(kLongScale / kShortScale) = 2.2 (a length scale of 0.67 of the range).
// Optuna's GPSampler uses 0.1 and 0.1 (mode at 1); a stronger penalty on long length scales keeps
// the model from being sure of a smooth trend after few trials: on 200 seeds never used to choose
// it, hartmann6's seeds still above -3.0 after 30 trials 76 against 95, mixed's above 0.05 3 against 22.
constexpr double kLongScale = 0.5, kShortScale = 0.1;
// A face of the box (a numeric dimension at its lowest or highest value) that the last
// kPinnedTrials trials and the next suggestion all sit on: the next one is moved inside instead,
// kFaceStep of the range or 2, 4 or 8 times that (the best acquisition of the four). Without it the
// model, which has seen no trial just inside, extrapolates the slope that led to the face and asks
// for the face again and again (hartmann6: x0 = 0 with its optimum at 0.20, a local basin's x5 = 0
// with its optimum at 0.04, 20 trials in a row).
constexpr int kPinnedTrials = 2;
constexpr double kFaceStep = 0.05;
// A point within this much of each range (in the model's [0, 1] coordinates) of a tried or running
// configuration is that configuration again: it would teach the model nothing. (Closer than 1e-3
// is allowed: near the optimum the model asks for points that close, as Optuna's GPSampler does.)
constexpr double kSameConfiguration = 1e-4;
// The raw hyper-parameters' bounds (logs): [-12, 12], and down to -25 for the noise (e^-25 above
// kMinNoise: the floor itself; at -12 it was 7e-6, and branin's best after 60 trials 4x further
// from the optimum: the model could not resolve the last digits).
constexpr double kRawUpper = 12.0;
double raw_lower(std::size_t j, std::size_t count) { return j + 1 == count ? -25.0 : -12.0; }

// ---- small dense linear algebra (row-major, n <= a few hundred) ---------------------------------

// The dot product of n doubles in four partial sums (independent chains the compiler can keep in
// vector registers: the O(n^3) and O(n^2) loops below are all dot products of contiguous rows).
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

// ---- the GP ---------------------------------------------------------------------------------

double matern52(double d2) {
  const double r = std::sqrt(5.0 * d2);
  return std::exp(-r) * (5.0 / 3.0 * d2 + r + 1.0);
}
// matern52 and its slope d matern52 / d d2, from one exponential.
std::pair<double, double> matern52_and_slope(double d2) {
  const double r = std::sqrt(5.0 * d2), e = std::exp(-r);
  return {e * (5.0 / 3.0 * d2 + r + 1.0), -5.0 / 6.0 * (r + 1.0) * e};
}

// Raw hyper-parameters: log of each inverse squared length scale, log of the kernel's scale,
// log of (noise - kMinNoise).
struct Hyper {
  std::vector<double> ils;
  double scale, noise;
  static Hyper from_raw(const std::vector<double>& raw, std::size_t d) {
    Hyper h{std::vector<double>(d), std::exp(raw[d]), kMinNoise + std::exp(raw[d + 1])};
    for (std::size_t k = 0; k < d; ++k) h.ils[k] = std::exp(raw[k]);
    return h;
  }
};

struct Gp {
  std::size_t n = 0, d = 0;
  std::vector<double> x;                   // n x d, numeric in [0, 1], a choice as its index
  std::vector<double> y;                   // standardised: lower is better
  std::vector<unsigned char> categorical;  // bytes, not std::vector<bool>'s bits: read in every distance
  Hyper h{};
  std::vector<double> l, alpha;  // the Cholesky factor of K + noise I, and (K + noise I)^-1 y
  std::vector<double> deltas;    // per pair i > j (row-major lower triangle) and dimension: delta2

  void prepare() {  // after x is set: the pairs' squared differences, computed once per fit
    deltas.resize(n * (n - 1) / 2 * d);
    std::size_t at = 0;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        for (std::size_t k = 0; k < d; ++k) deltas[at++] = delta2(&x[i * d], &x[j * d], k);
      }
    }
  }
  double pair_distance2(std::size_t pair, const Hyper& with) const {
    double s = 0;
    for (std::size_t k = 0; k < d; ++k) s += with.ils[k] * deltas[pair * d + k];
    return s;
  }

  double delta2(const double* a, const double* b, std::size_t k) const {
    if (categorical[k]) return a[k] == b[k] ? 0.0 : 1.0;
    const double t = a[k] - b[k];
    return t * t;
  }
  double distance2(const double* a, const double* b, const Hyper& with) const {
    double s = 0;
    for (std::size_t k = 0; k < d; ++k) s += with.ils[k] * delta2(a, b, k);
    return s;
  }
  // K + noise I; with `slopes`, also each pair's d matern52 / d distance2 (for the gradient).
  std::vector<double> covariance(const Hyper& with, std::vector<double>* slopes = nullptr) const {
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

  // The log marginal likelihood plus the log prior (weak priors on the length scales, the scale
  // and the noise, as Optuna's), and its gradient with respect to the raw parameters. -inf when the
  // covariance is not positive definite.
  double log_posterior(const std::vector<double>& raw, std::vector<double>* grad) const {
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
      for (std::size_t j = 0; j <= i; ++j)
        w[i * n + j] = a[i] * a[j] - dot(&inv_t[i * n + i], &inv_t[j * n + i], n - i);
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

  // Fixes the hyper-parameters and factors the covariance (more jitter when it must).
  bool condition(const std::vector<double>& raw) {
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

  // The posterior mean and standard deviation of f at `at`.
  std::pair<double, double> posterior(const double* at) const {
    double mean = 0, sd = 0;
    posteriors(at, 1, &mean, &sd);
    return {mean, sd};
  }

  // The same at `m` points (`at`: m x d) into `mean` and `sd`: the triangular solve runs across
  // the points (row i of `k` holds trial i's covariances with all of them), which vectorises.
  void posteriors(const double* at, std::size_t m, double* mean, double* sd) const {
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

  // The same with the gradients of the mean and the standard deviation with respect to `at`'s
  // numeric coordinates (a choice's: 0). var = scale - k^T K^-1 k, so dvar = -2 (K^-1 k)^T dk.
  std::pair<double, double> posterior(const double* at, double* dmean, double* dsd) const {
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
};

// L-BFGS ascent (memory 6, backtracking line search) on the raw hyper-parameters. Kept whole: the
// two-loop recursion, the line search and the memory update read best as one algorithm.
// The gradient without its components that point out of the bounds at a parameter on them (as
// L-BFGS-B's projected gradient): the noise at its floor is converged, not still climbing (which
// kept every warm-started fit going for its 30 iterations).
void project(const std::vector<double>& p, std::vector<double>& g) {
  for (std::size_t j = 0; j < p.size(); ++j) {
    if ((p[j] <= raw_lower(j, p.size()) && g[j] < 0) || (p[j] >= kRawUpper && g[j] > 0)) g[j] = 0;
  }
}

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

// log(phi(z) + z Phi(z)): the log of the expected improvement of a unit Gaussian, accurate far
// into the tail (an asymptotic series below z = -10), so that the acquisition has a slope even
// where the improvement is hopeless.
double log_h(double z) {
  constexpr double log_sqrt_2pi = 0.91893853320467274178;
  if (z > -10) {
    const double phi = std::exp(-0.5 * z * z - log_sqrt_2pi);
    const double big_phi = 0.5 * std::erfc(-z / std::sqrt(2.0));
    return std::log(std::max(phi + z * big_phi, 1e-300));
  }
  const double r = 1.0 / (z * z);
  return -0.5 * z * z - log_sqrt_2pi + std::log(r * (1.0 - 3.0 * r * (1.0 - 5.0 * r * (1.0 - 7.0 * r))));
}

// d log_h / dz: Phi(z) / (phi(z) + z Phi(z)), and below z = -10 the derivative of the series.
double log_h_slope(double z) {
  constexpr double log_sqrt_2pi = 0.91893853320467274178;
  if (z > -10) {
    const double phi = std::exp(-0.5 * z * z - log_sqrt_2pi);
    const double big_phi = 0.5 * std::erfc(-z / std::sqrt(2.0));
    return big_phi / std::max(phi + z * big_phi, 1e-300);
  }
  const double r = 1.0 / (z * z);
  const double p = 1.0 - 3.0 * r + 15.0 * r * r - 105.0 * r * r * r;
  const double dp = -3.0 + 30.0 * r - 315.0 * r * r;
  return -z - 2.0 / z - 2.0 / (z * z * z) * dp / p;
}

// The model's coordinates: a numeric parameter scaled to [0, 1], a choice as its index.
struct Scaling {
  const std::vector<Dimension>& dims;
  std::vector<bool> categorical;
  std::vector<std::pair<double, double>> ranges;

  explicit Scaling(const std::vector<Dimension>& of) : dims(of), categorical(of.size()), ranges(of.size()) {
    for (std::size_t k = 0; k < dims.size(); ++k) {
      categorical[k] = dims[k].type == "choice";
      if (!categorical[k]) ranges[k] = coordinates::range_of(dims[k]);
    }
  }
  void scale(const std::vector<double>& x, double* out) const {
    for (std::size_t k = 0; k < dims.size(); ++k) {
      out[k] = categorical[k] ? x[k] : (x[k] - ranges[k].first) / (ranges[k].second - ranges[k].first);
    }
  }
  std::vector<double> unscale(const double* u) const {
    std::vector<double> x(dims.size());
    for (std::size_t k = 0; k < dims.size(); ++k) {
      const auto [lo, hi] = ranges[k];
      x[k] = categorical[k] ? u[k] : coordinates::snap(dims[k], lo + std::clamp(u[k], 0.0, 1.0) * (hi - lo));
    }
    return x;
  }
  // Where `u` lands once snapped to a value the space allows.
  void snap(double* u) const { scale(unscale(u), u); }
};

// The trials (sorted, lowest loss first) in the model's coordinates, their losses standardised.
template <typename Observations>  // ModelStrategy::Observation (protected)
Gp observed(const Scaling& scaling, const Observations& sorted) {
  Gp gp;
  gp.d = scaling.dims.size();
  gp.categorical.assign(scaling.categorical.begin(), scaling.categorical.end());
  gp.n = sorted.size();
  gp.x.resize(gp.n * gp.d);
  gp.y.resize(gp.n);
  double mean = 0, var = 0;
  for (const auto& o : sorted) mean += o.loss;
  mean /= static_cast<double>(gp.n);
  for (const auto& o : sorted) var += (o.loss - mean) * (o.loss - mean);
  const double sd = std::max(std::sqrt(var / static_cast<double>(gp.n)), 1e-10);
  for (std::size_t i = 0; i < gp.n; ++i) {
    scaling.scale(sorted[i].x, &gp.x[i * gp.d]);
    gp.y[i] = (sorted[i].loss - mean) / sd;
  }
  gp.prepare();
  return gp;
}

// The hyper-parameters: from the last fit; from the defaults too at the first and every 10th fit
// (the better one), so that a poor local optimum is left.
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

// The acquisition: log expected improvement over the best trial.
struct LogEi {
  const Gp& gp;
  double best;
  double operator()(const double* u) const {
    const auto [m, s] = gp.posterior(u);
    return std::log(s) + log_h((best - m) / s);
  }
  // The values at `m` points (`at`: m x d).
  void operator()(const double* at, std::size_t m, double* out) const {
    std::vector<double> mean(m), sd(m);
    gp.posteriors(at, m, mean.data(), sd.data());
    for (std::size_t c = 0; c < m; ++c) out[c] = std::log(sd[c]) + log_h((best - mean[c]) / sd[c]);
  }
  // The value, and its gradient in `grad` (d entries).
  double operator()(const double* u, double* grad) const {
    std::vector<double> dm(gp.d), ds(gp.d);
    const auto [m, s] = gp.posterior(u, dm.data(), ds.data());
    const double z = (best - m) / s, slope = log_h_slope(z);
    for (std::size_t k = 0; k < gp.d; ++k) grad[k] = ds[k] / s - slope * (dm[k] + z * ds[k]) / s;
    return std::log(s) + log_h(z);
  }
};

// `count` candidates (random points, and the first quarter, at most 256, near the 5 best of the
// `observed` trials), each with its acquisition, the best first for `starts` of them.
std::vector<std::pair<double, std::vector<double>>> candidates(const Gp& gp, const Scaling& scaling, const LogEi& acq,
                                                               std::size_t observed, std::size_t count,
                                                               std::size_t starts, std::mt19937_64& rng) {
  const std::size_t d = gp.d;
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  std::normal_distribution<double> jitter(0.0, 0.05);
  std::vector<std::pair<double, std::vector<double>>> scored(count);
  const std::size_t near = std::min<std::size_t>(count / 4, 256);
  const std::size_t best_trials = std::min<std::size_t>(observed, 5);
  for (std::size_t c = 0; c < count; ++c) {
    std::vector<double> u(d);
    const double* around = c < near ? &gp.x[(c % best_trials) * d] : nullptr;
    for (std::size_t k = 0; k < d; ++k) {
      if (gp.categorical[k]) {
        const auto options = static_cast<double>(scaling.dims[k].choices.size());
        u[k] = around != nullptr && u01(rng) < 0.8 ? around[k] : std::min(std::floor(u01(rng) * options), options - 1);
      } else {
        u[k] = around != nullptr ? std::clamp(around[k] + jitter(rng), 0.0, 1.0) : u01(rng);
      }
    }
    scaling.snap(u.data());
    scored[c].second = std::move(u);
  }
  constexpr std::size_t kBlock = 128;  // points per batch: the covariances stay in the cache
  std::vector<double> block(kBlock * d), values(kBlock);
  for (std::size_t first = 0; first < count; first += kBlock) {
    const std::size_t m = std::min(kBlock, count - first);
    for (std::size_t c = 0; c < m; ++c) std::copy_n(scored[first + c].second.begin(), d, &block[c * d]);
    acq(block.data(), m, values.data());
    for (std::size_t c = 0; c < m; ++c) scored[first + c].first = values[c];
  }
  std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(std::max<std::size_t>(starts, 1)),
                    scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return scored;
}

// Whether `u` is, to kSameConfiguration, one of the model's points (observed or running).
bool already_tried(const Gp& gp, const std::vector<double>& u) {
  for (std::size_t i = 0; i < gp.n; ++i) {
    bool same = true;
    for (std::size_t k = 0; k < gp.d && same; ++k) same = std::abs(u[k] - gp.x[i * gp.d + k]) <= kSameConfiguration;
    if (same) return true;
  }
  return false;
}

// The local step from `u`: gradient ascent on the continuous coordinates (finite differences), then
// each choice's options tried in turn. Returns the acquisition where it ends.
double refine(std::vector<double>& u, double value, const Gp& gp, const Scaling& scaling, const LogEi& acq) {
  const std::size_t d = gp.d;
  double step = 0.05;
  std::vector<double> grad(d), trial(d);
  for (int it = 0; it < 30 && step > 1e-6; ++it) {
    acq(u.data(), grad.data());
    const double norm = std::sqrt(dot(grad.data(), grad.data(), d));
    if (!(norm > 0)) break;
    bool moved = false;
    while (step > 1e-6) {
      for (std::size_t k = 0; k < d; ++k)
        trial[k] = gp.categorical[k] ? u[k] : std::clamp(u[k] + step * grad[k] / norm, 0.0, 1.0);
      const double v = acq(trial.data());
      if (v > value) {
        u = trial;
        value = v;
        step *= 2;
        moved = true;
        break;
      }
      step *= 0.5;
    }
    if (!moved) break;
  }
  scaling.snap(u.data());
  value = acq(u.data());
  for (std::size_t k = 0; k < d; ++k) {
    if (!gp.categorical[k]) continue;
    for (std::size_t c = 0; c < scaling.dims[k].choices.size(); ++c) {
      trial = u;
      trial[k] = static_cast<double>(c);
      const double v = acq(trial.data());
      if (v > value) {
        u = trial;
        value = v;
      }
    }
  }
  return value;
}

// `u` moved off each face it shares with the last kPinnedTrials observed trials (`last`: their
// rows in the model), to the best of the steps inside (see kFaceStep).
void leave_pinned_faces(std::vector<double>& u, const Gp& gp, const std::vector<std::size_t>& last,
                        const Scaling& scaling, const LogEi& acq) {
  for (std::size_t k = 0; k < gp.d; ++k) {
    const bool on_face = !gp.categorical[k] && (u[k] == 0.0 || u[k] == 1.0);
    if (!on_face || !std::all_of(last.begin(), last.end(), [&](std::size_t i) { return gp.x[i * gp.d + k] == u[k]; }))
      continue;
    double best = -std::numeric_limits<double>::infinity();
    std::vector<double> inside, trial;
    for (double step = kFaceStep; step < 0.5; step *= 2) {
      trial = u;
      trial[k] = u[k] == 0.0 ? step : 1.0 - step;
      scaling.snap(trial.data());  // an integer's next value may be further in, or (rounded back) the face
      if (trial[k] == u[k]) continue;
      const double value = acq(trial.data());
      if (value > best) best = value, inside = trial;
    }
    if (!inside.empty()) u = inside;
  }
}

// The rows of the `count` trials observed last.
template <typename Observations>  // ModelStrategy::Observation (protected)
std::vector<std::size_t> latest(const Observations& sorted, std::size_t count) {
  std::vector<std::size_t> rows(sorted.size());
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  count = std::min(count, rows.size());
  std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(count), rows.end(),
                    [&](std::size_t a, std::size_t b) { return sorted[a].order > sorted[b].order; });
  rows.resize(count);
  return rows;
}

}  // namespace

GpStrategy::GpStrategy(SearchSpace space, GpOptions options)
    : ModelStrategy(std::move(space), options.seed(), options.maximize(), options.startup_trials()), options_(options) {
  if (options_.candidates() < 1 || options_.local_starts() < 0 || options_.startup_trials() < 0) {
    throw std::invalid_argument("gp: candidates must be >= 1, local_starts and startup_trials >= 0");
  }
}

std::unique_ptr<ModelStrategy> GpStrategy::nested(SearchSpace space, uint64_t seed) const {
  GpOptions o = options_;
  o.seed(seed);
  return std::make_unique<GpStrategy>(std::move(space), o);
}

std::vector<double> GpStrategy::model_point(const std::vector<Observation>& sorted,
                                            const std::vector<std::vector<double>>& running) {
  const Scaling scaling(space().dimensions());
  Gp gp = observed(scaling, sorted);
  const double best = gp.y.front();  // sorted: the lowest
  const std::vector<double> fitted = fit(gp, hyper_, fits_++);
  hyper_ = fitted;
  if (options_.constant_liar() && !running.empty()) {  // kriging believer: a running trial gives its mean
    if (!gp.condition(fitted)) return scaling.unscale(&gp.x[0]);
    // Each mean from the observed trials' model: a point believed at its mean leaves the mean
    // elsewhere as it was, so the order does not matter (the model grows only once all are in).
    std::vector<double> believed;
    for (const auto& r : running) {
      std::vector<double> u(gp.d);
      scaling.scale(r, u.data());
      believed.push_back(gp.posterior(u.data()).first);
      gp.x.insert(gp.x.end(), u.begin(), u.end());
    }
    gp.y.insert(gp.y.end(), believed.begin(), believed.end());
    gp.n += running.size();
    gp.prepare();
  }
  if (!gp.condition(fitted)) return scaling.unscale(&gp.x[0]);

  const LogEi acq{gp, best};
  const std::size_t count = static_cast<std::size_t>(options_.candidates());
  const std::size_t starts = std::min<std::size_t>(static_cast<std::size_t>(options_.local_starts()), count);
  auto scored = candidates(gp, scaling, acq, sorted.size(), count, starts, rng());
  for (std::size_t s = 0; s < starts; ++s) {
    std::vector<double> u = scored[s].second;
    const double value = refine(u, scored[s].first, gp, scaling, acq);
    if (value > scored[s].first) scored[s] = {value, std::move(u)};
  }
  {  // and from the best trial, as Optuna's GPSampler does: the model's view of the best basin
    std::vector<double> u(gp.x.begin(), gp.x.begin() + static_cast<std::ptrdiff_t>(gp.d));
    const double value = refine(u, acq(u.data()), gp, scaling, acq);
    scored.emplace_back(value, std::move(u));
  }
  // The best acquisition among configurations not tried yet (where the model settles on a tried
  // one, as at a boundary point it sees no curvature at, asking again would repeat it for ever);
  // a tried one only when every candidate is.
  std::size_t pick = 0;
  bool pick_tried = already_tried(gp, scored[0].second);
  for (std::size_t c = 1; c < scored.size(); ++c) {
    const bool tried = already_tried(gp, scored[c].second);
    if ((pick_tried && !tried) || (tried == pick_tried && scored[c].first > scored[pick].first))
      pick = c, pick_tried = tried;
  }
  if (sorted.size() >= static_cast<std::size_t>(kPinnedTrials))
    leave_pinned_faces(scored[pick].second, gp, latest(sorted, kPinnedTrials), scaling, acq);
  return scaling.unscale(scored[pick].second.data());
}

}  // namespace baton
