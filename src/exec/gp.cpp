#include "baton/exec/gp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>

#include "coordinates.h"
#include "gp_model.h"

namespace baton {
namespace {

using gp_model::dot;
using gp_model::fit;
using gp_model::Gp;
using gp_model::LogEi;

// A face of the box (a numeric dimension at its lowest or highest value) that the last
// kPinnedTrials trials and the next suggestion all sit on: the next one is moved inside instead,
// kFaceStep of the range or 2, 4 or 8 times that (the best acquisition of the four). Without it the
// model, which has seen no trial just inside, extrapolates the slope that led to the face and asks
// for the face again and again (hartmann6: x0 = 0 with its optimum at 0.20, a local basin's x5 = 0
// with its optimum at 0.04, 20 trials in a row).
constexpr int kPinnedTrials = 2;
constexpr double kFaceStep = 0.05;
// A point within this much of each range (in the model's [0, 1] coordinates) of a tried or running
// configuration is that configuration again: it would teach the model nothing. (Not 1e-3: near
// the optimum the model asks for points that close and learns from them, as GPSampler's does.)
constexpr double kSameConfiguration = 1e-4;

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

// The trials (sorted, lowest loss first) in the model's coordinates, `value` of each (by default
// the loss) standardised; `mean` and `sd` get the standardisation.
template <typename Observations, typename Value>  // ModelStrategy::Observation (protected)
Gp observed(const Scaling& scaling, const Observations& sorted, Value value, double* mean_out = nullptr,
            double* sd_out = nullptr) {
  Gp gp;
  gp.d = scaling.dims.size();
  gp.categorical.assign(scaling.categorical.begin(), scaling.categorical.end());
  gp.n = sorted.size();
  gp.x.resize(gp.n * gp.d);
  gp.y.resize(gp.n);
  double mean = 0, var = 0;
  for (const auto& o : sorted) mean += value(o);
  mean /= static_cast<double>(gp.n);
  for (const auto& o : sorted) var += (value(o) - mean) * (value(o) - mean);
  const double sd = std::max(std::sqrt(var / static_cast<double>(gp.n)), 1e-10);
  for (std::size_t i = 0; i < gp.n; ++i) {
    scaling.scale(sorted[i].x, &gp.x[i * gp.d]);
    gp.y[i] = (value(sorted[i]) - mean) / sd;
  }
  gp.prepare();
  if (mean_out != nullptr) *mean_out = mean;
  if (sd_out != nullptr) *sd_out = sd;
  return gp;
}

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

// The candidate with the best acquisition among configurations not tried yet (where the model
// settles on a tried one, as at a boundary point it sees no curvature at, asking again would repeat
// it for ever); a tried one only when every candidate is.
std::size_t best_untried(const Gp& gp, const std::vector<std::pair<double, std::vector<double>>>& scored) {
  std::size_t pick = 0;
  bool pick_tried = already_tried(gp, scored[0].second);
  for (std::size_t c = 1; c < scored.size(); ++c) {
    const bool tried = already_tried(gp, scored[c].second);
    if ((pick_tried && !tried) || (tried == pick_tried && scored[c].first > scored[pick].first))
      pick = c, pick_tried = tried;
  }
  return pick;
}

// The local step from `u`: gradient ascent on the continuous coordinates (log EI's gradient), then
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
    for (int doubling = 0; std::ldexp(kFaceStep, doubling) < 0.5; ++doubling) {  // kFaceStep, twice that, ...
      const double step = std::ldexp(kFaceStep, doubling);
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

struct GpStrategy::Impl {
  GpOptions options_;
  std::vector<double> hyper_;  // the last fit's raw hyper-parameters: the next fit starts there
  int64_t fits_ = 0;
};

GpStrategy::~GpStrategy() = default;

GpStrategy::GpStrategy(SearchSpace space, GpOptions options)
    : ModelStrategy(std::move(space), options.seed(), Objectives{{options.maximize()}, options.constraints()},
                    options.startup_trials()),
      impl_(std::make_unique<Impl>()) {
  impl_->options_ = options;
  if (options.candidates() < 1 || options.local_starts() < 0 || options.startup_trials() < 0) {
    throw std::invalid_argument("gp: candidates must be >= 1, local_starts and startup_trials >= 0");
  }
}

std::unique_ptr<ModelStrategy> GpStrategy::nested(SearchSpace space, uint64_t seed) const {
  GpOptions o = impl_->options_;
  o.seed(seed);
  return std::make_unique<GpStrategy>(std::move(space), o);
}

std::vector<double> GpStrategy::model_point(const std::vector<Observation>& sorted,
                                            const std::vector<std::vector<double>>& running) {
  const Scaling scaling(space().dimensions());
  Gp gp = observed(scaling, sorted, [](const Observation& o) { return o.loss; });
  const double best = gp.y.front();  // sorted: the lowest feasible first
  const std::vector<double> fitted = fit(gp, impl_->hyper_, impl_->fits_++);
  impl_->hyper_ = fitted;
  if (impl_->options_.constant_liar() && !running.empty()) {  // kriging believer: a running trial gives its mean
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

  // Constraints: a GP of each one's margin (fitted afresh: few trials, and the fit is the cost).
  std::vector<Gp> constraint_models;
  constraint_models.reserve(objectives().constraints.size());  // the acquisition keeps pointers
  std::vector<std::pair<const Gp*, double>> feasibility;
  for (std::size_t i = 0; i < objectives().constraints.size(); ++i) {
    double mean = 0, sd = 1;
    Gp c = observed(
        scaling, sorted, [i](const Observation& o) { return o.margins[i]; }, &mean, &sd);
    if (!c.condition(fit(c, {}, 0))) continue;
    constraint_models.push_back(std::move(c));
    feasibility.emplace_back(&constraint_models.back(), -mean / sd);
  }
  const LogEi acq{gp, best, feasibility, sorted.front().violation <= 0};
  const std::size_t count = static_cast<std::size_t>(impl_->options_.candidates());
  const std::size_t starts = std::min<std::size_t>(static_cast<std::size_t>(impl_->options_.local_starts()), count);
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
  std::vector<double>& u = scored[best_untried(gp, scored)].second;
  if (sorted.size() >= static_cast<std::size_t>(kPinnedTrials))
    leave_pinned_faces(u, gp, latest(sorted, kPinnedTrials), scaling, acq);
  return scaling.unscale(u.data());
}

}  // namespace baton
