// Search spaces in NNI's format (strategy.h: what suggests trials from them).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/options.h"

namespace baton {

// {name: {_type: choice|randint|uniform|quniform|loguniform|qloguniform|normal, _value: [...]}}.
// A choice's value may be an object with "_name" and nested dimensions of its own: a sampled
// value is then that object with its dimensions sampled.
struct Dimension {
  std::string name;
  std::string type;
  std::vector<double> bounds{};  // the numeric _value (not for choice)
  std::vector<nlohmann::json> choices{};
  std::vector<std::vector<Dimension>> nested{};  // per choice (empty when the choice is a plain value)
};

class SearchSpace {
 public:
  // Throws std::invalid_argument "<where>: '<name>': <what> (<fix>)" on a malformed space.
  static SearchSpace from_json(const nlohmann::json& space, const std::string& where = "search space");
  // A .json file, or YAML (anything else); errors name the file.
  static SearchSpace from_file(const std::filesystem::path& path);
  // The file's definition as JSON (what from_file builds from), unchecked.
  static nlohmann::json read_file(const std::filesystem::path& path);
  // `text` (JSON, or else YAML) as JSON; errors start with `where` (and the line for YAML).
  static nlohmann::json parse_text(const std::string& text, bool json, const std::string& where);
  // The dimensions of a nested choice as a space of their own.
  static SearchSpace from_dimensions(std::vector<Dimension> dimensions);

  const std::vector<Dimension>& dimensions() const { return dims_; }
  nlohmann::json sample(std::mt19937_64& rng) const;
  // Every combination: choices and integers in full, continuous ranges at `points` values each
  // (log-spaced for log types). Throws when there would be more than `limit`.
  std::vector<nlohmann::json> grid(int points = 5, std::size_t limit = 1000000) const;
  // Whether `parameters` could have come from this space (names, types, ranges).
  bool contains(const nlohmann::json& parameters) const;

 private:
  std::vector<Dimension> dims_;
};

// A trial's parameters one level deep: a nested object's keys as dotted keys ("optimizer.lr"), a
// nested choice's "_name" as KEY.name: what a recipe's --set overrides and a table's columns are.
std::vector<std::pair<std::string, nlohmann::json>> flat_parameters(const nlohmann::json& parameters);

double sample_dimension(const Dimension& d, std::mt19937_64& rng);  // numeric types only
// round(v / q) * q, without the binary noise (0.15, not 0.15000000000000002).
double quantize(double v, double q);

}  // namespace baton
