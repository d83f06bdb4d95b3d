// StateDict: what an object saves to, and restores from, a checkpoint.
//
//   baton::StateDict sd;
//   sd.values["count"] = 3;                 // scalars, strings, nested objects (JSON)
//   sd.tensors["ema/fc.weight"] = weights;  // tensors by name
#pragma once

#include <map>
#include <string>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace baton {

struct StateDict {
  nlohmann::json values = nlohmann::json::object();
  std::map<std::string, at::Tensor> tensors;

  bool empty() const { return values.empty() && tensors.empty(); }

  // Puts `child` under `prefix`: values[prefix] and tensors "<prefix>/<name>".
  void insert(const std::string& prefix, const StateDict& child);
  // The part that insert(prefix, …) put there; empty when there is none.
  StateDict extract(const std::string& prefix) const;
};

}  // namespace baton
