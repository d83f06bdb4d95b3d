// The internal coordinates the model-based strategies (TPE, GP) work in: a numeric dimension as a
// real number (the log of a log type; an integer's range widened by 0.5 each side), a choice as
// its index; and a Latin hypercube for their start-up suggestions.
#pragma once

#include <optional>
#include <random>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/exec/space.h"

namespace baton::coordinates {

bool is_log(const Dimension& d);
// A numeric dimension's range: log for log types; randint as [low - 0.5, high - 0.5] (high is
// exclusive); a normal as mu ± 4 sigma.
std::pair<double, double> range_of(const Dimension& d);
// A value of the space from a coordinate (a choice's plain value: nested ones are the caller's).
nlohmann::json value_of(const Dimension& d, double x);
// The coordinate of a value; a choice's index, -1 when it is none of them; NaN when not a number.
double coordinate_of(const Dimension& d, const nlohmann::json& v);
// Where a coordinate lands once it is a value (integers and quantized values are rounded).
double snap(const Dimension& d, double x);
// The coordinates of parameters of this space, or nullopt when they are not from it.
std::optional<std::vector<double>> of(const std::vector<Dimension>& dims, const nlohmann::json& parameters);

// `size` points spread over the space: each numeric dimension cut in `size` strata, each used once
// (a normal dimension: drawn from it); a choice's options taken in turn in a shuffled order.
class LatinHypercube {
 public:
  LatinHypercube(const std::vector<Dimension>& dims, std::size_t size, std::mt19937_64& rng);
  std::vector<double> point(std::size_t j, std::mt19937_64& rng) const;
  std::size_t size() const { return size_; }

 private:
  const std::vector<Dimension>* dims_;
  std::size_t size_;
  std::vector<std::vector<std::size_t>> strata_;
};

}  // namespace baton::coordinates
