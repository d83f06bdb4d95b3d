// Trace: the record of one algorithm applied on one event.
//
//   baton::Traces traces = engine.run_event(baton::Event::kBeforeLoss);
//   for (const auto& [key, trace] : traces) std::cout << key << " order=" << *trace.order;
//   // key is "<algorithm name>/<event string>", e.g. "LabelSmoothing/before_loss"
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "baton/core/event.h"

namespace baton {

struct Trace {
  std::string name;  // the algorithm's name()
  Event event = Event::kInit;
  std::optional<int> exit_code;  // what apply() returned
  std::optional<int> order;      // 0 for the first algorithm that ran on this event
  bool run = false;

  bool operator==(const Trace&) const = default;
};

// Run order; key "<algorithm name>/<event string>". Holds only the algorithms that ran.
using Traces = std::vector<std::pair<std::string, Trace>>;

}  // namespace baton
