// A YAML value as JSON, the one conversion recipes and search spaces share. Private to src/.
#pragma once

#include <nlohmann/json.hpp>

namespace YAML {
class Node;
}  // namespace YAML

namespace baton {

// true/false and numbers become JSON's (whole numbers as integers); a quoted scalar, and any other
// scalar, a string; null or undefined null; sequences arrays and maps objects.
nlohmann::json yaml_to_json(const YAML::Node& node);

}  // namespace baton
