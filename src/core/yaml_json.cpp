#include "yaml_json.h"

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <yaml-cpp/yaml.h>

namespace baton {
namespace {

std::string yaml_where(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// Visits every value as a reader walks them (an alias once per use), stopping at the first bound.
class BoundsWalk {
 public:
  BoundsWalk(const std::string& source, DocumentLimits limits) : source_(source), limits_(limits) {}
  void visit(const YAML::Node& node, int depth) {
    if (++values_ > limits_.max_values) {
      throw std::invalid_argument(yaml_where(source_, node.Mark()) + ": more than " +
                                  std::to_string(limits_.max_values) +
                                  " values once its aliases are expanded (anchors of anchors?); write the values out");
    }
    if (depth > limits_.max_depth) {
      throw std::invalid_argument(yaml_where(source_, node.Mark()) + ": nested deeper than " +
                                  std::to_string(limits_.max_depth) + " levels");
    }
    if (node.IsSequence()) {
      for (const auto& item : node) visit(item, depth + 1);
    } else if (node.IsMap()) {
      for (auto it = node.begin(); it != node.end(); ++it) {
        if (!it->first.IsScalar()) {
          throw std::invalid_argument(yaml_where(source_, it->first.Mark()) +
                                      ": a key must be a plain name, not a list or a mapping");
        }
        visit(it->first, depth + 1);
        visit(it->second, depth + 1);
      }
    }
  }

 private:
  const std::string& source_;
  DocumentLimits limits_;
  std::size_t values_ = 0;
};

// YAML is printable Unicode text (YAML 1.2, 5.1): bytes that are not UTF-8, and control characters
// other than tab and line breaks, are refused where they are, before yaml-cpp reads (and would
// misread) them.
void check_printable_utf8(const std::string& text, const std::string& source) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::string at = source + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
    std::size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (length == 0 || i + length > text.size()) throw std::invalid_argument(at + "not UTF-8 text");
    for (std::size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) throw std::invalid_argument(at + "not UTF-8 text");
    }
    if (length == 1 && ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      throw std::invalid_argument(at + "a control character (" + hex + "); YAML is printable text");
    }
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += length;
  }
}

}  // namespace

void check_yaml_bounds(const YAML::Node& node, const std::string& source, DocumentLimits limits) {
  BoundsWalk(source, limits).visit(node, 0);
}

YAML::Node load_yaml(const std::string& text, const std::string& source, DocumentLimits limits) {
  check_printable_utf8(text, source);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(yaml_where(source, e.mark) + ": not valid YAML: " + e.msg);
  }
  check_yaml_bounds(root, source, limits);
  return root;
}

nlohmann::json parse_json(const std::string& text, const std::string& source, DocumentLimits limits) {
  std::size_t values = 0;
  auto bounded = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > limits.max_depth) {
      throw std::invalid_argument(source + ": nested deeper than " + std::to_string(limits.max_depth) + " levels");
    }
    if (++values > 4 * limits.max_values) {  // every value raises several events
      throw std::invalid_argument(source + ": more than " + std::to_string(limits.max_values) + " values");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, bounded);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(source + ": not valid JSON: " + e.what());
  }
}

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
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted
  if (text == "true" || text == "false") return text == "true";
  int64_t i = 0;
  double d = 0;
  if (YAML::convert<int64_t>::decode(node, i)) return i;
  uint64_t u = 0;  // 2^63 to 2^64 - 1 (a seed, say), exactly
  if (!text.empty() && text[0] != '-' && YAML::convert<uint64_t>::decode(node, u)) return u;
  if (YAML::convert<double>::decode(node, d)) return d;
  return text;
}

}  // namespace baton
