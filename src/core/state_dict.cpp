#include "baton/core/state_dict.h"

namespace baton {

void StateDict::insert(const std::string& prefix, const StateDict& child) {
  if (!child.values.empty()) values[prefix] = child.values;
  const std::string head = prefix + "/";
  for (const auto& [name, tensor] : child.tensors) tensors[head + name] = tensor;
}

StateDict StateDict::extract(const std::string& prefix) const {
  StateDict out;
  if (auto it = values.find(prefix); it != values.end()) out.values = *it;
  const std::string head = prefix + "/";
  for (auto it = tensors.lower_bound(head); it != tensors.end() && it->first.compare(0, head.size(), head) == 0; ++it) {
    out.tensors[it->first.substr(head.size())] = it->second;
  }
  return out;
}

}  // namespace baton
