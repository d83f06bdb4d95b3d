#include "baton/core/state.h"

#include <stdexcept>
#include <unordered_map>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

namespace baton {
namespace {

// Keys for objects of one kind: their names, with "#2", "#3" … for repeats.
template <typename T>
std::vector<std::string> unique_keys(const std::vector<std::shared_ptr<T>>& objects) {
  std::vector<std::string> keys;
  std::unordered_map<std::string, int> seen;
  for (const auto& object : objects) {
    std::string key = object->name();
    if (const int n = ++seen[key]; n > 1) key.append("#").append(std::to_string(n));
    keys.push_back(std::move(key));
  }
  return keys;
}

}  // namespace

int64_t Batch::size() const { return input.defined() && input.dim() > 0 ? input.size(0) : 0; }

std::pair<at::Tensor, at::Tensor> positions_as_rows(const at::Tensor& outputs, const at::Tensor& targets) {
  if (outputs.dim() != 3) return {outputs, targets};
  return {outputs.flatten(0, 1), targets.dim() == 3 ? targets.flatten(0, 1) : targets.flatten()};
}

State::State() = default;
State::~State() = default;

std::optional<double> State::elapsed_duration() const {
  if (!max_duration) return std::nullopt;
  if (max_duration->unit() == TimeUnit::kDuration) return std::nullopt;
  if (max_duration->value() == 0.0) return 1.0;
  return timestamp.get(max_duration->unit()) / *max_duration;
}

std::optional<double> State::eval_metric(const std::string& key) const {
  const auto slash = key.rfind('/');
  if (slash == std::string::npos) return std::nullopt;
  const auto label = eval_metrics.find(key.substr(0, slash));
  if (label == eval_metrics.end()) return std::nullopt;
  const auto value = label->second.find(key.substr(slash + 1));
  if (value == label->second.end()) return std::nullopt;
  return value->second;
}

StateDict State::state_dict() const {
  StateDict out;
  out.values["timestamp"] = timestamp.state_dict();
  out.values["run_name"] = run_name;
  out.values["precision"] = std::string(to_string(precision));
  out.values["max_duration"] = max_duration ? nlohmann::json(max_duration->to_string()) : nlohmann::json(nullptr);
  if (model) {
    for (const auto& item : model->named_parameters()) {
      if (!unsaved_model_tensors.count(item.key())) out.tensors["model/" + item.key()] = item.value();
    }
    for (const auto& item : model->named_buffers()) {
      if (!unsaved_model_tensors.count(item.key())) out.tensors["model/" + item.key()] = item.value();
    }
  }
  const auto algorithm_keys = unique_keys(algorithms);
  for (std::size_t i = 0; i < algorithms.size(); ++i) {
    out.insert("algorithms/" + algorithm_keys[i], algorithms[i]->state_dict());
  }
  const auto callback_keys = unique_keys(callbacks);
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    out.insert("callbacks/" + callback_keys[i], callbacks[i]->state_dict());
  }
  return out;
}

void State::load_state_dict(const StateDict& state) {
  if (auto it = state.values.find("timestamp"); it != state.values.end()) timestamp.load_state_dict(*it);
  if (auto it = state.values.find("run_name"); it != state.values.end() && it->is_string()) run_name = *it;
  if (auto it = state.values.find("precision"); it != state.values.end() && it->is_string()) {
    precision = parse_precision(it->get<std::string>());
  }
  if (auto it = state.values.find("max_duration"); it != state.values.end() && it->is_string()) {
    max_duration = Time::parse(it->get<std::string>());
  }
  if (model) {
    torch::NoGradGuard no_grad;
    auto restore = [&](const std::string& name, at::Tensor& target) {
      auto it = state.tensors.find("model/" + name);
      if (it == state.tensors.end() && unsaved_model_tensors.count(name)) return;
      if (it == state.tensors.end()) {
        throw std::invalid_argument("state dict has no tensor 'model/" + name + "'; was it saved from another model?");
      }
      if (it->second.sizes() != target.sizes()) {
        throw std::invalid_argument("tensor 'model/" + name + "' has shape " + c10::str(it->second.sizes()) +
                                    " in the state dict but " + c10::str(target.sizes()) + " in the model");
      }
      target.copy_(it->second);
    };
    for (auto& item : model->named_parameters()) restore(item.key(), item.value());
    for (auto& item : model->named_buffers()) restore(item.key(), item.value());
  }
  const auto algorithm_keys = unique_keys(algorithms);
  for (std::size_t i = 0; i < algorithms.size(); ++i) {
    algorithms[i]->load_state_dict(state.extract("algorithms/" + algorithm_keys[i]));
  }
  const auto callback_keys = unique_keys(callbacks);
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    callbacks[i]->load_state_dict(state.extract("callbacks/" + callback_keys[i]));
  }
}

}  // namespace baton
