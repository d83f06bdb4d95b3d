// Workspace: named values (tensors and scalars) shared by the steps of the tasks on one node.
// A child workspace sees its parent's values and keeps its own; every access is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <variant>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace baton {

using WorkspaceValue = std::variant<double, int64_t, bool, std::string, at::Tensor>;

class Workspace : public std::enable_shared_from_this<Workspace> {
 public:
  ~Workspace();
  static std::shared_ptr<Workspace> create();
  // A new workspace whose lookups fall back to this one.
  std::shared_ptr<Workspace> child();
  const std::shared_ptr<Workspace>& parent() const;

  void set(const std::string& name, WorkspaceValue value);  // in this workspace
  // This workspace's value, else the nearest ancestor's; nullopt when none has it.
  std::optional<WorkspaceValue> get(const std::string& name) const;
  bool has(const std::string& name) const { return get(name).has_value(); }
  // Typed reads: throw std::out_of_range naming the value when missing, std::invalid_argument
  // when it holds another type (an int64 reads as a double too).
  double get_double(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  std::string get_string(const std::string& name) const;
  at::Tensor get_tensor(const std::string& name) const;
  // Atomically replaces the value where it lives (this workspace or the nearest ancestor that has
  // it; here when none has it): `update(v)` gets the current value (nullopt when missing).
  void update(const std::string& name, const std::function<WorkspaceValue(std::optional<WorkspaceValue>)>& update);
  // a += delta on a number (created as delta when missing), atomically; returns the new value.
  double add(const std::string& name, double delta);
  std::vector<std::string> names() const;  // this workspace's own, sorted
  bool erase(const std::string& name);     // from this workspace only

 private:
  Workspace();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A value as text, for outputs and messages: numbers, booleans, strings; a tensor as its shape.
std::string to_string(const WorkspaceValue& value);
// A value as JSON and back, exactly (how MpiSession moves outputs between ranks): {"d": 1.5},
// {"i": 3}, {"b": true}, {"s": "x"}, {"t": {"dtype": "float32", "shape": [2], "data": [..]}} (a
// tensor's values on the CPU). value_from_json throws std::invalid_argument on anything else.
nlohmann::json value_to_json(const WorkspaceValue& value);
WorkspaceValue value_from_json(const nlohmann::json& json);
// The plain JSON of a value, for people: a number, boolean or string; a tensor as nested lists.
nlohmann::json value_to_plain_json(const WorkspaceValue& value);

}  // namespace baton
