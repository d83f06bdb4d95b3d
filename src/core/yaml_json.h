// YAML and JSON documents read with bounds, and a YAML value as JSON: what recipes and search spaces
// share. Private to src/.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace YAML {
class Node;
}  // namespace YAML

namespace baton {

// How big a document baton reads may be once its aliases are expanded, and how deep. A recipe or a
// search space is a few hundred values a few levels deep; these refuse "billion laughs" (anchors of
// anchors) and nesting that would exhaust the stack, in milliseconds.
struct DocumentLimits {
  std::size_t max_values = 200000;  // Default: 200,000 values, every alias counted as what it expands to
  int max_depth = 100;              // Default: 100 levels of nesting
};

// Parses YAML and checks its bounds. Throws std::invalid_argument "SOURCE:LINE:COL: why".
YAML::Node load_yaml(const std::string& text, const std::string& source, DocumentLimits limits = {});

// Throws std::invalid_argument when `node` is larger or deeper than the limits (visited as a reader
// would: an alias as many times as it is used).
void check_yaml_bounds(const YAML::Node& node, const std::string& source, DocumentLimits limits = {});

// Parses JSON, refusing nesting deeper than the limits before it is built. Throws
// std::invalid_argument "SOURCE: why".
nlohmann::json parse_json(const std::string& text, const std::string& source, DocumentLimits limits = {});

// true/false and numbers become JSON's (whole numbers as integers); a quoted scalar, and any other
// scalar, a string; null or undefined null; sequences arrays and maps objects. Call it on a node
// check_yaml_bounds accepted.
nlohmann::json yaml_to_json(const YAML::Node& node);

}  // namespace baton
