#include "baton/exec/pareto.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "baton/core/options.h"

namespace baton {
namespace {

// The hypervolume of points that are all better than `reference`, in the first `d` coordinates.
double volume(std::vector<const std::vector<double>*> points, const std::vector<double>& reference, std::size_t d) {
  if (points.empty()) return 0.0;
  if (d == 1) {
    double best = reference[0];
    for (const auto* p : points) best = std::min(best, (*p)[0]);
    return reference[0] - best;
  }
  if (d == 2) {  // by the first coordinate; each point that lowers the second adds a rectangle
    std::sort(points.begin(), points.end(), [](const auto* a, const auto* b) {
      return (*a)[0] < (*b)[0] || ((*a)[0] == (*b)[0] && (*a)[1] < (*b)[1]);
    });
    double area = 0, low = reference[1];
    for (const auto* p : points) {
      if ((*p)[1] >= low) continue;
      area += (reference[0] - (*p)[0]) * (low - (*p)[1]);
      low = (*p)[1];
    }
    return area;
  }
  // Slices along the last coordinate: between two successive values, the (d-1)-volume of the
  // points below.
  const std::size_t last = d - 1;
  std::sort(points.begin(), points.end(), [last](const auto* a, const auto* b) { return (*a)[last] < (*b)[last]; });
  double total = 0;
  std::vector<const std::vector<double>*> below;
  for (std::size_t i = 0; i < points.size(); ++i) {
    below.push_back(points[i]);
    const double top = i + 1 < points.size() ? (*points[i + 1])[last] : reference[last];
    const double height = top - (*points[i])[last];
    if (height > 0) total += volume(below, reference, d - 1) * height;
  }
  return total;
}

}  // namespace

Objective parse_objective(const std::string& text) {
  const auto colon = text.rfind(':');
  const std::string direction = colon == std::string::npos ? "" : trimmed(text.substr(colon + 1));
  Objective o{colon == std::string::npos ? "" : trimmed(text.substr(0, colon)), true};
  if (direction == "min" || direction == "minimize") {
    o.maximize = false;
  } else if (direction != "max" && direction != "maximize") {
    o.metric.clear();
  }
  if (o.metric.empty()) {
    throw std::invalid_argument("--objective '" + text +
                                "': expected METRIC:max or METRIC:min, e.g. eval/accuracy:max");
  }
  return o;
}

std::string Constraint::to_string() const {
  char bound_text[64];
  const auto end = std::to_chars(bound_text, bound_text + sizeof bound_text, bound).ptr;  // the shortest exact
  return metric + (at_most ? "<=" : ">=") + std::string(bound_text, end);
}

Constraint parse_constraint(const std::string& text) {
  const auto at = text.find_first_of("<>");
  Constraint c;
  bool ok = at != std::string::npos && at + 1 < text.size() && text[at + 1] == '=';
  if (ok) {
    c.metric = trimmed(text.substr(0, at));
    c.at_most = text[at] == '<';
    const std::string value = trimmed(text.substr(at + 2));
    char* end = nullptr;
    c.bound = std::strtod(value.c_str(), &end);
    ok = !c.metric.empty() && !value.empty() && end != nullptr && *end == '\0' && std::isfinite(c.bound);
  }
  if (!ok) {
    throw std::invalid_argument("--constraint '" + text +
                                "': expected METRIC<=VALUE or METRIC>=VALUE with a finite number, e.g. params<=100000");
  }
  return c;
}

bool Objectives::usable(const Trial& t) const {
  if (t.status != TrialStatus::kTrained) return false;
  const auto values = t.objectives();
  if (values.size() != maximize.size() || t.metrics.constraints.size() != constraints.size()) return false;
  const auto finite = [](double v) { return std::isfinite(v); };
  return std::all_of(values.begin(), values.end(), finite) &&
         std::all_of(t.metrics.constraints.begin(), t.metrics.constraints.end(), finite);
}

std::vector<double> Objectives::losses(const Trial& t) const {
  std::vector<double> out = t.objectives();
  for (std::size_t i = 0; i < out.size() && i < maximize.size(); ++i) {
    if (maximize[i]) out[i] = -out[i];
  }
  return out;
}

double Objectives::violation(const Trial& t) const {
  double total = 0;
  for (std::size_t i = 0; i < constraints.size() && i < t.metrics.constraints.size(); ++i) {
    const double v = t.metrics.constraints[i], b = constraints[i].bound;
    total += std::max(0.0, constraints[i].at_most ? v - b : b - v);
  }
  return total;
}

bool dominates(const std::vector<double>& a, const std::vector<double>& b) {
  bool better = false;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] > b[i]) return false;
    better = better || a[i] < b[i];
  }
  return better;
}

bool constrained_dominates(const std::vector<double>& a, double violation_a, const std::vector<double>& b,
                           double violation_b) {
  if (violation_a <= 0 && violation_b <= 0) return dominates(a, b);
  if (violation_a <= 0) return true;
  if (violation_b <= 0) return false;
  return violation_a < violation_b;
}

std::vector<std::vector<std::size_t>> nondominated_fronts(const std::vector<std::vector<double>>& losses,
                                                          const std::vector<double>& violations, std::size_t enough) {
  auto violation = [&](std::size_t i) { return violations.empty() ? 0.0 : violations[i]; };
  auto beats = [&](std::size_t a, std::size_t b) {
    return constrained_dominates(losses[a], violation(a), losses[b], violation(b));
  };
  // Peeling: each front is what stays undominated in one pass over the rest (O(n * front)), so
  // the few first fronts of many points cost little.
  std::vector<std::size_t> rest(losses.size());
  std::iota(rest.begin(), rest.end(), 0);
  std::vector<std::vector<std::size_t>> fronts;
  std::size_t placed = 0;
  while (!rest.empty() && placed < enough) {
    std::vector<std::size_t> front, later;
    for (std::size_t i : rest) {
      if (std::any_of(front.begin(), front.end(), [&](std::size_t f) { return beats(f, i); })) {
        later.push_back(i);
        continue;
      }
      auto beaten = std::stable_partition(front.begin(), front.end(), [&](std::size_t f) { return !beats(i, f); });
      later.insert(later.end(), beaten, front.end());
      front.erase(beaten, front.end());
      front.push_back(i);
    }
    std::sort(front.begin(), front.end());
    std::sort(later.begin(), later.end());
    placed += front.size();
    fronts.push_back(std::move(front));
    rest = std::move(later);
  }
  return fronts;
}

std::vector<double> crowding_distances(const std::vector<std::vector<double>>& losses,
                                       const std::vector<std::size_t>& front) {
  const std::size_t n = front.size();
  std::vector<double> distance(n, 0.0);
  if (n <= 2) return std::vector<double>(n, std::numeric_limits<double>::infinity());
  std::vector<std::size_t> order(n);
  for (std::size_t m = 0; m < losses[front[0]].size(); ++m) {
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return losses[front[a]][m] < losses[front[b]][m]; });
    const double low = losses[front[order.front()]][m], high = losses[front[order.back()]][m];
    distance[order.front()] = distance[order.back()] = std::numeric_limits<double>::infinity();
    if (!(high > low)) continue;
    for (std::size_t r = 1; r + 1 < n; ++r) {
      distance[order[r]] += (losses[front[order[r + 1]]][m] - losses[front[order[r - 1]]][m]) / (high - low);
    }
  }
  return distance;
}

double hypervolume(const std::vector<std::vector<double>>& losses, const std::vector<double>& reference) {
  std::vector<const std::vector<double>*> inside;
  for (const auto& p : losses) {
    bool better = p.size() == reference.size();
    for (std::size_t i = 0; better && i < p.size(); ++i) better = p[i] < reference[i];
    if (better) inside.push_back(&p);
  }
  // Only the non-dominated ones add volume; dropping the rest keeps the slices small.
  std::vector<const std::vector<double>*> front;
  for (const auto* p : inside) {
    const bool dominated = std::any_of(inside.begin(), inside.end(), [&](const auto* q) { return dominates(*q, *p); });
    if (!dominated) front.push_back(p);
  }
  return volume(front, reference, reference.size());
}

std::vector<double> hypervolume_contributions(const std::vector<std::vector<double>>& losses,
                                              const std::vector<double>& reference) {
  const double all = hypervolume(losses, reference);
  std::vector<double> out(losses.size());
  std::vector<std::vector<double>> others;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    others.assign(losses.begin(), losses.end());
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    out[i] = std::max(0.0, all - hypervolume(others, reference));
  }
  return out;
}

std::vector<Trial> pareto_front(const std::vector<Trial>& trials, const Objectives& objectives) {
  std::vector<const Trial*> candidates;
  std::vector<std::vector<double>> losses;
  for (const auto& t : trials) {
    if (!objectives.usable(t) || objectives.violation(t) > 0) continue;
    candidates.push_back(&t);
    losses.push_back(objectives.losses(t));
  }
  std::vector<Trial> front;
  if (candidates.empty()) return front;
  const auto fronts = nondominated_fronts(losses, {}, 1);
  for (std::size_t i : fronts.front()) front.push_back(*candidates[i]);
  std::sort(front.begin(), front.end(), [](const Trial& a, const Trial& b) { return a.id < b.id; });
  return front;
}

}  // namespace baton
