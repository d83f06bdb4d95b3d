// Several objectives and constraints: what a search optimises beyond one number.
//
// Objective values are compared as losses, lower is better in every coordinate (a maximized
// objective is negated). A constraint is `METRIC<=VALUE` or `METRIC>=VALUE`; a trial breaking one is
// infeasible, and the amounts by which it breaks them add up to its violation (0: feasible).
// Constraint-dominance (Deb 2002, as Optuna's samplers use it): a feasible trial beats an
// infeasible one, two infeasible ones compare by violation, two feasible ones by Pareto dominance.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "baton/exec/trial.h"

namespace baton {

struct Objective {
  std::string metric;
  bool maximize = true;
};

// "METRIC:max" or "METRIC:min" (also maximize/minimize); std::invalid_argument saying the form.
Objective parse_objective(const std::string& text);

struct Constraint {
  std::string metric;
  bool at_most = true;  // METRIC<=bound; false: METRIC>=bound
  double bound = 0;
  std::string to_string() const;
};

// "METRIC<=VALUE" or "METRIC>=VALUE"; std::invalid_argument saying the form.
Constraint parse_constraint(const std::string& text);

// How the trials of a search are compared: the directions of its objectives and its constraints.
struct Objectives {
  std::vector<bool> maximize{true};
  std::vector<Constraint> constraints{};
  std::vector<std::string> metrics{};  // their names, when known
  std::size_t size() const { return maximize.size(); }
  // A Trained trial with one value per objective (and one per constraint) that are all finite.
  bool usable(const Trial& t) const;
  // Its values as losses (negated where maximized); only for usable trials.
  std::vector<double> losses(const Trial& t) const;
  // The sum of the amounts by which it breaks its constraints (0: feasible).
  double violation(const Trial& t) const;
};

// a is no worse than b in every coordinate and better in one.
bool dominates(const std::vector<double>& a, const std::vector<double>& b);
// With violations (constraint-dominance, above).
bool constrained_dominates(const std::vector<double>& a, double violation_a, const std::vector<double>& b,
                           double violation_b);

// Non-dominated sorting (Deb's fast sort): front 0 holds the points no other dominates, front 1
// those only front 0 dominates, ...; indices into `losses`. `violations` (empty: all feasible) give
// constraint-dominance. Stops once the fronts hold `enough` points.
std::vector<std::vector<std::size_t>> nondominated_fronts(const std::vector<std::vector<double>>& losses,
                                                          const std::vector<double>& violations = {},
                                                          std::size_t enough = std::numeric_limits<std::size_t>::max());

// NSGA-II's crowding distance of each point of one front (infinite at each objective's ends).
std::vector<double> crowding_distances(const std::vector<std::vector<double>>& losses,
                                       const std::vector<std::size_t>& front);

// The volume dominated by the points and bounded by `reference` (points not better than it in
// every coordinate add nothing). Exact: a sweep in 2 dimensions, slices of it above.
double hypervolume(const std::vector<std::vector<double>>& losses, const std::vector<double>& reference);
// Each point's exclusive share of it: hypervolume(all) - hypervolume(all but the point).
std::vector<double> hypervolume_contributions(const std::vector<std::vector<double>>& losses,
                                              const std::vector<double>& reference);

// The Pareto front of a search: its usable, feasible trials no other one dominates, by id.
std::vector<Trial> pareto_front(const std::vector<Trial>& trials, const Objectives& objectives);

}  // namespace baton
