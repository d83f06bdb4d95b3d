#include "coordinates.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace baton::coordinates {

bool is_log(const Dimension& d) { return d.type == "loguniform" || d.type == "qloguniform"; }

std::pair<double, double> range_of(const Dimension& d) {
  if (d.type == "normal") return {d.bounds[0] - 4 * d.bounds[1], d.bounds[0] + 4 * d.bounds[1]};
  if (d.type == "randint") return {std::ceil(d.bounds[0]) - 0.5, std::ceil(d.bounds[1]) - 0.5};
  if (is_log(d)) return {std::log(d.bounds[0]), std::log(d.bounds[1])};
  return {d.bounds[0], d.bounds[1]};
}

nlohmann::json value_of(const Dimension& d, double x) {
  if (d.type == "choice") return d.choices[static_cast<std::size_t>(x)];
  const auto [lo, hi] = range_of(d);
  x = std::clamp(x, lo, hi);
  if (d.type == "randint") {
    return static_cast<int64_t>(std::clamp(std::round(x), std::ceil(d.bounds[0]), std::ceil(d.bounds[1]) - 1));
  }
  double v = is_log(d) ? std::exp(x) : x;
  if (d.type == "quniform" || d.type == "qloguniform")
    v = std::clamp(quantize(v, d.bounds[2]), d.bounds[0], d.bounds[1]);
  return v;
}

double coordinate_of(const Dimension& d, const nlohmann::json& v) {
  if (d.type == "choice") {
    for (std::size_t i = 0; i < d.choices.size(); ++i) {
      const bool nested = !d.nested[i].empty();
      if (nested ? (v.is_object() && v.value("_name", nlohmann::json()) == d.choices[i]["_name"]) : v == d.choices[i])
        return static_cast<double>(i);
    }
    return -1;
  }
  if (!v.is_number()) return std::numeric_limits<double>::quiet_NaN();
  const double x = v.get<double>();
  return is_log(d) ? std::log(std::max(x, 1e-300)) : x;
}

double snap(const Dimension& d, double x) {
  if (d.type == "choice" || d.type == "uniform" || d.type == "loguniform" || d.type == "normal") return x;
  return coordinate_of(d, value_of(d, x));
}

std::optional<std::vector<double>> of(const std::vector<Dimension>& dims, const nlohmann::json& parameters) {
  std::vector<double> x;
  x.reserve(dims.size());
  for (const auto& d : dims) {
    if (!parameters.is_object() || !parameters.contains(d.name)) return std::nullopt;
    const double v = coordinate_of(d, parameters[d.name]);
    if ((d.type == "choice" && v < 0) || !std::isfinite(v)) return std::nullopt;
    x.push_back(v);
  }
  return x;
}

LatinHypercube::LatinHypercube(const std::vector<Dimension>& dims, std::size_t size, std::mt19937_64& rng)
    : dims_(&dims), size_(std::max<std::size_t>(size, 1)), strata_(dims.size()) {
  for (auto& p : strata_) {
    p.resize(size_);
    std::iota(p.begin(), p.end(), 0);
    std::shuffle(p.begin(), p.end(), rng);
  }
}

std::vector<double> LatinHypercube::point(std::size_t j, std::mt19937_64& rng) const {
  const auto& dims = *dims_;
  std::vector<double> x(dims.size());
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const auto& d = dims[k];
    const double u = (static_cast<double>(strata_[k][j % size_]) + u01(rng)) / static_cast<double>(size_);
    if (d.type == "choice") {
      x[k] = std::min(std::floor(u * static_cast<double>(d.choices.size())), static_cast<double>(d.choices.size() - 1));
    } else if (d.type == "normal") {
      x[k] = sample_dimension(d, rng);
    } else {
      const auto [lo, hi] = range_of(d);
      x[k] = snap(d, lo + u * (hi - lo));
    }
  }
  return x;
}

}  // namespace baton::coordinates
