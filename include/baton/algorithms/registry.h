// Algorithms by recipe name, with their options as JSON (what a recipe's `algorithms:` section
// holds).
//
//   auto mixup = baton::make_algorithm("mixup", {{"alpha", 0.4}});
//   auto ema = baton::make_algorithm("ema", {{"half_life", "50ba"}});
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/algorithm.h"
#include "baton/core/options.h"

namespace baton {

// Builds the algorithm `name` with `options` (a JSON object; a missing key takes its default,
// listed in docs/algorithms.md). The algorithm remembers both (Algorithm::recipe_spec), so a
// checkpoint can rebuild a surgery algorithm. Throws std::invalid_argument for an unknown name
// (listing the known ones) and OptionError (baton/core/options.h) for an unknown key or a bad value.
std::shared_ptr<Algorithm> make_algorithm(const std::string& name,
                                          const nlohmann::json& options = nlohmann::json::object());
// As above, with the options an OptionReader reads (a recipe's section, whose errors name its lines).
std::shared_ptr<Algorithm> make_algorithm(const std::string& name, OptionReader& options);

// The names make_algorithm knows, sorted.
std::vector<std::string> algorithm_names();

}  // namespace baton
