// Callbacks by recipe name, with their options as JSON (a recipe's `callbacks:` section).
//
//   auto stopper = baton::make_callback("threshold_stopper", {{"monitor", "eval/accuracy"}, {"threshold", 0.91}});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/callback.h"
#include "baton/core/options.h"

namespace baton {

// Throws std::invalid_argument for an unknown name (listing the known ones) and OptionError for
// an unknown key or a bad value.
std::shared_ptr<Callback> make_callback(const std::string& name,
                                        const nlohmann::json& options = nlohmann::json::object());
// As above, with the options an OptionReader reads (a recipe's section, whose errors name its lines).
std::shared_ptr<Callback> make_callback(const std::string& name, OptionReader& options);

// The names make_callback knows, sorted.
std::vector<std::string> callback_names();

}  // namespace baton
