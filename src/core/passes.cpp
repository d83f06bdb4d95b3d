#include "baton/core/passes.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include <spdlog/spdlog.h>

#include "baton/core/algorithm.h"

namespace baton {
namespace {

constexpr std::string_view kSelectiveBackprop = "SelectiveBackprop";

bool is_low_precision_norm(const Algorithm* algorithm) {
  const std::string name = algorithm->name();
  return name == "LowPrecisionLayerNorm" || name == "LowPrecisionGroupNorm";
}

}  // namespace

std::vector<Algorithm*> sort_to_front(std::vector<Algorithm*> algorithms, std::string_view name) {
  std::stable_partition(algorithms.begin(), algorithms.end(), [&](Algorithm* a) { return a->name() == name; });
  return algorithms;
}

std::vector<Algorithm*> sort_selective_backprop_first(std::vector<Algorithm*> algorithms, Event /*event*/) {
  return sort_to_front(std::move(algorithms), kSelectiveBackprop);
}

std::vector<Algorithm*> sort_low_precision_norm_last(std::vector<Algorithm*> algorithms, Event /*event*/) {
  std::stable_partition(algorithms.begin(), algorithms.end(), [](Algorithm* a) { return !is_low_precision_norm(a); });
  return algorithms;
}

std::vector<Algorithm*> set_filo_order(std::vector<Algorithm*> algorithms, Event event) {
  if (!to_string(event).starts_with("after_")) return algorithms;
  auto first = algorithms.begin();
  while (first != algorithms.end() && (*first)->name() == kSelectiveBackprop) ++first;
  auto last = algorithms.end();
  while (last != first && is_low_precision_norm(*(last - 1))) --last;
  std::reverse(first, last);
  return algorithms;
}

AlgorithmPass warn_if_multiple_loss_interpolation() {
  struct Warned {
    std::mutex mutex;
    std::set<Event> events;
  };
  auto warned = std::make_shared<Warned>();
  return [warned](std::vector<Algorithm*> algorithms, Event event) {
    std::string names;
    int count = 0;
    for (const Algorithm* a : algorithms) {
      if (!a->interpolate_loss()) continue;
      names += (count++ ? ", " : "") + a->name();
    }
    if (count > 1) {
      std::lock_guard<std::mutex> lock(warned->mutex);
      if (warned->events.insert(event).second) {
        spdlog::warn("{} algorithms interpolate the loss on {} ({}); they will compound. Use one of them.", count,
                     to_string(event), names);
      }
    }
    return algorithms;
  };
}

std::vector<AlgorithmPass> default_passes() {
  return {sort_selective_backprop_first, sort_low_precision_norm_last, set_filo_order,
          warn_if_multiple_loss_interpolation()};
}

}  // namespace baton
