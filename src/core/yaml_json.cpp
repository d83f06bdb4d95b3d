#include "yaml_json.h"

#include <cstdint>
#include <string>

#include <yaml-cpp/yaml.h>

namespace baton {

nlohmann::json yaml_to_json(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(yaml_to_json(item));
    return out;
  }
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto it = node.begin(); it != node.end(); ++it) out[it->first.as<std::string>()] = yaml_to_json(it->second);
    return out;
  }
  const std::string text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted
  if (text == "true" || text == "false") return text == "true";
  int64_t i = 0;
  double d = 0;
  if (YAML::convert<int64_t>::decode(node, i)) return i;
  if (YAML::convert<double>::decode(node, d)) return d;
  return text;
}

}  // namespace baton
