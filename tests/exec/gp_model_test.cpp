// The GP strategy's model (src/exec/gp_model.h): its closed-form gradients against central finite
// differences, and the batched posterior against the one-point one. A wrong gradient does not
// crash a search, it only makes it worse, so it is checked here directly.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "exec/gp_model.h"

namespace {

using baton::gp_model::Gp;
using baton::gp_model::LogEi;

// n trials in d dimensions, the last one a choice of 3 options, the loss a smooth function of the
// numeric ones (standardised), the model fitted to them.
Gp fitted_model(std::size_t n, std::size_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  Gp gp;
  gp.n = n;
  gp.d = d;
  gp.categorical.assign(d, 0);
  gp.categorical[d - 1] = 1;
  gp.x.resize(n * d);
  gp.y.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    double loss = 0;
    for (std::size_t k = 0; k + 1 < d; ++k) {
      gp.x[i * d + k] = u01(rng);
      loss += std::sin(3.0 * gp.x[i * d + k] + static_cast<double>(k));
    }
    gp.x[i * d + d - 1] = static_cast<double>(i % 3);
    gp.y[i] = loss + 0.3 * gp.x[i * d + d - 1];
  }
  gp.prepare();
  EXPECT_TRUE(gp.condition(baton::gp_model::fit(gp, {}, 0)));
  return gp;
}

// Central differences of f along coordinate k of `at`.
template <typename F>
double slope_along(const F& f, std::vector<double> at, std::size_t k, double h) {
  const double x = at[k];
  at[k] = x + h;
  const double up = f(at);
  at[k] = x - h;
  return (up - f(at)) / (2 * h);
}

TEST(GpModel, LogExpectedImprovementsGradientIsItsSlope) {
  for (uint64_t seed = 0; seed < 3; ++seed) {
    const Gp gp = fitted_model(20, 4, seed);
    const LogEi acq{gp, *std::min_element(gp.y.begin(), gp.y.end())};
    std::mt19937_64 rng(100 + seed);
    std::uniform_real_distribution<double> u01(0.05, 0.95);
    for (int point = 0; point < 10; ++point) {
      std::vector<double> u = {u01(rng), u01(rng), u01(rng), static_cast<double>(point % 3)};
      std::vector<double> grad(gp.d);
      const double value = acq(u.data(), grad.data());
      EXPECT_NEAR(value, acq(u.data()), 1e-12 * std::abs(value));
      for (std::size_t k = 0; k + 1 < gp.d; ++k) {
        const double numeric = slope_along([&](const std::vector<double>& v) { return acq(v.data()); }, u, k, 1e-6);
        EXPECT_NEAR(grad[k], numeric, 1e-4 * (1.0 + std::abs(numeric))) << "seed " << seed << " point " << point;
      }
      EXPECT_EQ(grad[gp.d - 1], 0.0);  // a choice has no slope
    }
  }
}

TEST(GpModel, MarginalLikelihoodsGradientIsItsSlope) {
  const Gp gp = fitted_model(25, 3, 7);
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> raw_value(-2.0, 1.0);
  for (int draw = 0; draw < 5; ++draw) {
    std::vector<double> raw(gp.d + 2);
    for (double& r : raw) r = raw_value(rng);
    raw.back() = -6.0;  // the noise's log excess
    std::vector<double> grad;
    gp.log_posterior(raw, &grad);
    ASSERT_EQ(grad.size(), raw.size());
    for (std::size_t j = 0; j < raw.size(); ++j) {
      const double numeric =
          slope_along([&](const std::vector<double>& r) { return gp.log_posterior(r, nullptr); }, raw, j, 1e-5);
      EXPECT_NEAR(grad[j], numeric, 1e-4 * (1.0 + std::abs(numeric))) << "parameter " << j << " draw " << draw;
    }
  }
}

TEST(GpModel, LogHsSlopeHoldsOnBothSidesOfItsSeries) {
  using baton::gp_model::log_h;
  using baton::gp_model::log_h_slope;
  for (double z = -40; z <= 5; z += 0.37) {
    const double numeric = (log_h(z + 1e-5) - log_h(z - 1e-5)) / 2e-5;
    EXPECT_NEAR(log_h_slope(z), numeric, 1e-4 * (1.0 + std::abs(numeric))) << "z " << z;
  }
  // The series meets the closed form at z = -20: across it, log_h moves by its slope and no more.
  const double eps = 1e-7;
  EXPECT_NEAR(log_h(-20 + eps) - log_h(-20 - eps), 2 * eps * log_h_slope(-20), 1e-10);
  EXPECT_NEAR(log_h(0.0), std::log(1.0 / std::sqrt(2 * M_PI)), 1e-12);
}

TEST(GpModel, TheBatchedPosteriorIsTheOnePointOne) {
  const Gp gp = fitted_model(30, 3, 11);
  std::vector<double> at;
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const std::size_t m = 200;
  for (std::size_t c = 0; c < m; ++c) at.insert(at.end(), {u01(rng), u01(rng), static_cast<double>(c % 3)});
  std::vector<double> mean(m), sd(m);
  gp.posteriors(at.data(), m, mean.data(), sd.data());
  for (std::size_t c = 0; c < m; ++c) {
    const auto [one_mean, one_sd] = gp.posterior(&at[c * gp.d]);
    EXPECT_NEAR(mean[c], one_mean, 1e-10);
    EXPECT_NEAR(sd[c], one_sd, 1e-10);
  }
  // At a trial the model is sure and close to what it saw (a deterministic loss: small noise).
  const auto [at_trial, sd_there] = gp.posterior(&gp.x[0]);
  EXPECT_NEAR(at_trial, gp.y[0], 0.05);
  EXPECT_LT(sd_there, 0.1 * std::sqrt(gp.h.scale));
}

}  // namespace
