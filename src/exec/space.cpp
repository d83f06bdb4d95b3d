#include "baton/exec/space.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "baton/core/options.h"
#include "baton/io/file.h"
#include "core/yaml_json.h"

namespace baton {
namespace {

constexpr std::uint64_t kMaxSpaceBytes = 16u << 20;

const std::vector<std::string> kTypes = {"choice",     "randint",     "uniform", "quniform",
                                         "loguniform", "qloguniform", "normal"};

std::string known_types() { return join_names({kTypes.begin(), kTypes.end()}); }

bool is_log(const std::string& type) { return type == "loguniform" || type == "qloguniform"; }

// JSON cannot hold inf or NaN (it writes null): a space must not either.
bool finite_everywhere(const nlohmann::json& j) {
  if (j.is_number_float()) return std::isfinite(j.get<double>());
  if (j.is_structured()) {
    for (const auto& v : j) {
      if (!finite_everywhere(v)) return false;
    }
  }
  return true;
}

// Nested choices deeper than this are refused (each level recurses here and in every strategy).
constexpr int kMaxNesting = 32;

// The numbers of one dimension, checked as a sampler will use them: finite, a range a double can
// span, whole numbers for randint (with a whole number between them).
void check_bounds(const Dimension& d, const nlohmann::json& value,
                  const std::function<void(const std::string&)>& fail) {
  for (double b : d.bounds) {
    if (!std::isfinite(b)) fail("_value holds " + value.dump() + ": every number must be finite");
  }
  const double lo = d.bounds[0], hi = d.bounds[1];
  if (d.type == "normal") {
    if (!(hi > 0)) fail("sigma must be > 0, got " + value.dump());
    if (!std::isfinite(lo + 4 * hi) || !std::isfinite(lo - 4 * hi))
      fail("mu +- 4 sigma must be finite, got " + value.dump());
    return;
  }
  if (!(lo < hi)) fail("low must be below high, got " + value.dump());
  if (!std::isfinite(hi - lo)) fail("the range " + value.dump() + " is wider than a double can hold; narrow it");
  if (is_log(d.type) && !(lo > 0)) fail(d.type + " needs low > 0, got " + value.dump());
  if (d.bounds.size() == 3 && !(d.bounds[2] > 0)) fail("q must be > 0, got " + value.dump());
  if (d.type == "randint") {
    constexpr double kExact = 9007199254740992.0;  // 2^53: whole numbers a double holds exactly
    if (lo != std::floor(lo) || hi != std::floor(hi)) {
      fail("randint takes whole numbers [low, high) (high excluded), got " + value.dump());
    }
    if (std::fabs(lo) > kExact || std::fabs(hi) > kExact) {
      fail("randint's bounds must lie within +-2^53, got " + value.dump());
    }
  }
}

std::vector<Dimension> parse_dims(const nlohmann::json& space, const std::string& where, const std::string& prefix,
                                  int depth = 0) {
  if (depth > kMaxNesting) {
    throw std::invalid_argument(where + ": '" + prefix + "': choices nested more than " + std::to_string(kMaxNesting) +
                                " levels deep");
  }
  if (!space.is_object()) {
    throw std::invalid_argument(where + (prefix.empty() ? "" : ": '" + prefix + "'") +
                                ": expected a mapping of parameter names to {_type, _value}");
  }
  std::vector<Dimension> dims;
  for (const auto& [name, spec] : space.items()) {
    if (name == "_name") continue;
    const std::string path = prefix.empty() ? name : std::string(prefix).append(".").append(name);
    auto fail = [&](const std::string& what) {
      throw std::invalid_argument(std::string(where).append(": '").append(path).append("': ").append(what));
    };
    if (!spec.is_object() || !spec.contains("_type") || !spec.contains("_value")) {
      fail("expected {_type: ..., _value: [...]}, e.g. {_type: uniform, _value: [0.001, 0.1]}");
    }
    if (!spec["_type"].is_string()) fail("_type must be a string (one of " + known_types() + ")");
    Dimension d;
    d.name = name;
    d.type = spec["_type"].get<std::string>();
    if (std::find(kTypes.begin(), kTypes.end(), d.type) == kTypes.end()) {
      fail(unknown_name("_type", d.type, {kTypes.begin(), kTypes.end()}));
    }
    const nlohmann::json& value = spec["_value"];
    if (!value.is_array() || value.empty()) fail("_value must be a non-empty list");
    if (d.type == "choice") {
      for (const auto& c : value) {
        if (!finite_everywhere(c)) fail("a choice holds a number that is not finite (.inf, .nan): " + c.dump());
        d.choices.push_back(c);
        d.nested.push_back(c.is_object() && c.contains("_name")
                               ? parse_dims(c, where, path + "[" + c["_name"].dump() + "]", depth + 1)
                               : std::vector<Dimension>{});
      }
    } else {
      for (const auto& v : value) {
        if (!v.is_number()) fail("_value holds '" + v.dump() + "', not a number");
        d.bounds.push_back(v.get<double>());
      }
      const std::size_t want = (d.type == "quniform" || d.type == "qloguniform") ? 3 : 2;
      if (d.bounds.size() != want) {
        fail("_type " + d.type + " takes " + std::to_string(want) + " numbers in _value" +
             (want == 3 ? " [low, high, q]" : (d.type == "normal" ? " [mu, sigma]" : " [low, high]")) + ", got " +
             value.dump());
      }
      check_bounds(d, value, fail);
    }
    dims.push_back(std::move(d));
  }
  return dims;
}

nlohmann::json sample_dims(const std::vector<Dimension>& dims, std::mt19937_64& rng) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& d : dims) {
    if (d.type == "choice") {
      std::uniform_int_distribution<std::size_t> pick(0, d.choices.size() - 1);
      const std::size_t i = pick(rng);
      nlohmann::json v = d.choices[i];
      if (!d.nested[i].empty()) {
        nlohmann::json inner = sample_dims(d.nested[i], rng);
        inner["_name"] = v["_name"];
        v = inner;
      }
      out[d.name] = v;
    } else if (d.type == "randint") {
      out[d.name] = static_cast<int64_t>(sample_dimension(d, rng));
    } else {
      out[d.name] = sample_dimension(d, rng);
    }
  }
  return out;
}

std::vector<nlohmann::json> values_of(const Dimension& d, int points, std::size_t limit);

std::vector<nlohmann::json> grid_dims(const std::vector<Dimension>& dims, int points, std::size_t limit) {
  std::vector<nlohmann::json> combos = {nlohmann::json::object()};
  for (const auto& d : dims) {
    const auto values = values_of(d, points, limit);
    if (combos.size() * values.size() > limit) {
      throw std::invalid_argument("grid: the space has more than " + std::to_string(limit) +
                                  " points; use a random or tpe strategy, or fewer grid points");
    }
    std::vector<nlohmann::json> next;
    for (const auto& c : combos) {
      for (const auto& v : values) {
        nlohmann::json x = c;
        x[d.name] = v;
        next.push_back(std::move(x));
      }
    }
    combos.swap(next);
  }
  return combos;
}

std::vector<nlohmann::json> values_of(const Dimension& d, int points, std::size_t limit) {
  std::vector<nlohmann::json> out;
  if (d.type == "choice") {
    for (std::size_t i = 0; i < d.choices.size(); ++i) {
      if (d.nested[i].empty()) {
        out.push_back(d.choices[i]);
        continue;
      }
      for (auto inner : grid_dims(d.nested[i], points, limit)) {
        inner["_name"] = d.choices[i]["_name"];
        out.push_back(inner);
      }
    }
    return out;
  }
  if (d.type == "randint") {
    for (auto v = static_cast<int64_t>(std::ceil(d.bounds[0])); static_cast<double>(v) < d.bounds[1]; ++v) {
      out.push_back(v);
      if (out.size() > limit) break;
    }
    return out;
  }
  if (d.type == "quniform") {
    for (int64_t k = 0; d.bounds[0] + static_cast<double>(k) * d.bounds[2] <= d.bounds[1] + 1e-12; ++k) {
      out.push_back(quantize(d.bounds[0] + static_cast<double>(k) * d.bounds[2], d.bounds[2]));
      if (out.size() > limit) break;
    }
    return out;
  }
  double lo = d.bounds[0], hi = d.bounds[1];
  if (d.type == "normal") {
    lo = d.bounds[0] - 2 * d.bounds[1];
    hi = d.bounds[0] + 2 * d.bounds[1];
  }
  const bool log = is_log(d.type);
  for (int i = 0; i < points; ++i) {
    const double f = points == 1 ? 0.5 : static_cast<double>(i) / (points - 1);
    double v = log ? std::exp(std::log(lo) + f * (std::log(hi) - std::log(lo))) : lo + f * (hi - lo);
    if (d.type == "qloguniform") v = std::clamp(quantize(v, d.bounds[2]), lo, hi);
    if (out.empty() || out.back().get<double>() != v) out.push_back(v);
  }
  return out;
}

bool contains_dims(const std::vector<Dimension>& dims, const nlohmann::json& p) {
  if (!p.is_object()) return false;
  for (const auto& d : dims) {
    if (!p.contains(d.name)) return false;
    const auto& v = p[d.name];
    if (d.type == "choice") {
      bool found = false;
      for (std::size_t i = 0; i < d.choices.size() && !found; ++i) {
        if (d.nested[i].empty()) {
          found = v == d.choices[i];
        } else {
          found = v.is_object() && v.value("_name", nlohmann::json()) == d.choices[i]["_name"] &&
                  contains_dims(d.nested[i], v);
        }
      }
      if (!found) return false;
      continue;
    }
    if (!v.is_number()) return false;
    const double x = v.get<double>();
    if (d.type == "normal") continue;
    if (d.type == "randint" ? (x < d.bounds[0] || x >= d.bounds[1]) : (x < d.bounds[0] || x > d.bounds[1]))
      return false;
  }
  return true;
}

}  // namespace

double quantize(double v, double q) {
  const double x = std::round(v / q) * q;
  char text[32];
  std::snprintf(text, sizeof text, "%.12g", x);
  return std::strtod(text, nullptr);
}

double sample_dimension(const Dimension& d, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const double lo = d.bounds.at(0), hi = d.bounds.at(1);
  if (d.type == "randint") {
    std::uniform_int_distribution<int64_t> pick(static_cast<int64_t>(std::ceil(lo)),
                                                static_cast<int64_t>(std::ceil(hi)) - 1);
    return static_cast<double>(pick(rng));
  }
  if (d.type == "uniform") return lo + u01(rng) * (hi - lo);
  if (d.type == "quniform") {
    const double q = d.bounds[2];
    return std::clamp(quantize(lo + u01(rng) * (hi - lo), q), lo, hi);
  }
  if (d.type == "loguniform" || d.type == "qloguniform") {
    const double v = std::exp(std::log(lo) + u01(rng) * (std::log(hi) - std::log(lo)));
    if (d.type == "loguniform") return v;
    return std::clamp(quantize(v, d.bounds[2]), lo, hi);
  }
  if (d.type == "normal") return std::normal_distribution<double>(lo, hi)(rng);
  throw std::invalid_argument("sample_dimension: '" + d.name + "' is a " + d.type);
}

SearchSpace SearchSpace::from_json(const nlohmann::json& space, const std::string& where) {
  SearchSpace s;
  s.dims_ = parse_dims(space, where, "");
  if (s.dims_.empty()) throw std::invalid_argument(where + ": the search space has no parameters");
  return s;
}

SearchSpace SearchSpace::from_dimensions(std::vector<Dimension> dimensions) {
  SearchSpace space;
  space.dims_ = std::move(dimensions);
  return space;
}

SearchSpace SearchSpace::from_file(const std::filesystem::path& path) {
  return from_json(read_file(path), path.string());
}

nlohmann::json SearchSpace::read_file(const std::filesystem::path& path) {
  std::string text;
  try {
    text = baton::read_file(path.string(), {.what = "the search space", .max_bytes = kMaxSpaceBytes});
  } catch (const FileError& e) {
    throw std::invalid_argument(e.what());
  }
  return parse_text(text, path.extension() == ".json", path.string());
}

nlohmann::json SearchSpace::parse_text(const std::string& text, bool json, const std::string& where) {
  // The default depth (100) holds kMaxNesting levels of choices (3 levels of JSON each).
  nlohmann::json out = json ? parse_json(text, where) : yaml_to_json(load_yaml(text, where));
  try {
    static_cast<void>(out.dump());  // JSON text is UTF-8: what is not cannot be stored or shown
  } catch (const nlohmann::json::type_error&) {
    throw std::invalid_argument(where + ": not UTF-8 text");
  }
  return out;
}

nlohmann::json SearchSpace::sample(std::mt19937_64& rng) const { return sample_dims(dims_, rng); }

std::vector<nlohmann::json> SearchSpace::grid(int points, std::size_t limit) const {
  if (points < 1) throw std::invalid_argument("grid: points must be at least 1");
  return grid_dims(dims_, points, limit);
}

bool SearchSpace::contains(const nlohmann::json& parameters) const { return contains_dims(dims_, parameters); }

namespace {

void flatten_into(const nlohmann::json& j, const std::string& prefix,
                  std::vector<std::pair<std::string, nlohmann::json>>& out) {
  for (const auto& [key, value] : j.items()) {
    const std::string name = prefix + (key == "_name" ? "name" : key);
    if (value.is_object()) {
      flatten_into(value, name + ".", out);
    } else {
      out.emplace_back(name, value);
    }
  }
}

}  // namespace

std::vector<std::pair<std::string, nlohmann::json>> flat_parameters(const nlohmann::json& parameters) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  flatten_into(parameters, "", out);
  return out;
}

}  // namespace baton
