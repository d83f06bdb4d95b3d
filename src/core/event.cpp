#include "baton/core/event.h"

#include <stdexcept>
#include <string>

#include "event_list.h"

namespace baton {
namespace {

constexpr std::string_view kNames[] = {
#define BATON_EVENT_NAME(enumerator, name) #name,
    BATON_FOR_EACH_EVENT(BATON_EVENT_NAME)
#undef BATON_EVENT_NAME
};
static_assert(std::size(kNames) == kNumEvents, "event_list.h and the Event enum disagree");

#define BATON_EVENT_CHECK(enumerator, name) static_assert(kNames[static_cast<std::size_t>(Event::enumerator)] == #name);
BATON_FOR_EACH_EVENT(BATON_EVENT_CHECK)
#undef BATON_EVENT_CHECK

constexpr std::array<Event, kNumEvents> make_all() {
  std::array<Event, kNumEvents> events{};
  for (std::size_t i = 0; i < kNumEvents; ++i) events[i] = static_cast<Event>(i);
  return events;
}
constexpr std::array<Event, kNumEvents> kAll = make_all();

}  // namespace

const std::array<Event, kNumEvents>& all_events() { return kAll; }

std::string_view to_string(Event event) {
  const auto i = static_cast<std::size_t>(event);
  return i < kNumEvents ? kNames[i] : std::string_view("unknown_event");
}

Event parse_event(std::string_view name) {
  for (std::size_t i = 0; i < kNumEvents; ++i) {
    if (kNames[i] == name) return static_cast<Event>(i);
  }
  // Name a close match so a typo is fixed in one step.
  std::string hint;
  for (std::size_t i = 0; i < kNumEvents && !name.empty(); ++i) {
    if (kNames[i].find(name) != std::string_view::npos || name.find(kNames[i]) != std::string_view::npos) {
      hint = std::string("; did you mean '") + std::string(kNames[i]) + "'?";
      break;
    }
  }
  throw std::invalid_argument("unknown event '" + std::string(name) +
                              "': expected an event string such as 'fit_start', 'batch_end' or 'eval_end'" + hint);
}

bool is_before_event(Event event) {
  switch (event) {
    case Event::kBeforeLoad:
    case Event::kFitStart:
    case Event::kIterationStart:
    case Event::kEpochStart:
    case Event::kBeforeDataloader:
    case Event::kBatchStart:
    case Event::kBeforeTrainBatch:
    case Event::kBeforeForward:
    case Event::kBeforeLoss:
    case Event::kBeforeBackward:
    case Event::kEvalBeforeAll:
    case Event::kEvalStart:
    case Event::kEvalBatchStart:
    case Event::kEvalBeforeForward:
    case Event::kEvalStandaloneStart:
    case Event::kPredictStart:
    case Event::kPredictBatchStart:
    case Event::kPredictBeforeForward: return true;
    default: return false;
  }
}

bool is_after_event(Event event) {
  switch (event) {
    case Event::kAfterLoad:
    case Event::kFitEnd:
    case Event::kIterationEnd:
    case Event::kEpochEnd:
    case Event::kAfterDataloader:
    case Event::kBatchEnd:
    case Event::kAfterTrainBatch:
    case Event::kAfterForward:
    case Event::kAfterLoss:
    case Event::kAfterBackward:
    case Event::kEvalAfterAll:
    case Event::kEvalEnd:
    case Event::kEvalBatchEnd:
    case Event::kEvalAfterForward:
    case Event::kEvalStandaloneEnd:
    case Event::kPredictEnd:
    case Event::kPredictBatchEnd:
    case Event::kPredictAfterForward: return true;
    default: return false;
  }
}

bool is_eval(Event event) { return to_string(event).starts_with("eval_"); }

bool is_predict(Event event) { return to_string(event).starts_with("predict_"); }

std::string canonical_name(Event event) {
  std::string name(to_string(event));
  for (std::string_view part : {"before_", "after_", "_start", "_end"}) {
    const auto at = name.find(part);
    if (at != std::string::npos) name.erase(at, part.size());
  }
  return name;
}

}  // namespace baton
