// Events fired by the training loop, and the facts about them that the engine relies on.
//
//   baton::Event e = baton::parse_event("batch_end");  // Event::kBatchEnd
//   baton::to_string(e);                               // "batch_end"
//   baton::canonical_name(e);                          // "batch"
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace baton {

// The enumerators are in Composer's order: the training loop's events as one epoch of a run fires
// them (iteration, epoch, batch, its forward and backward, the checkpoints, fit_end), then the
// evaluation events (which fire inside training too, between batch_end and batch_checkpoint or
// epoch_end and epoch_checkpoint), then standalone evaluation and prediction.
enum class Event {
  kInit,
  kBeforeLoad,
  kAfterLoad,
  kFitStart,
  kIterationStart,
  kEpochStart,
  kBeforeDataloader,
  kAfterDataloader,
  kBatchStart,
  kBeforeTrainBatch,
  kBeforeForward,
  kAfterForward,
  kBeforeLoss,
  kAfterLoss,
  kBeforeBackward,
  kAfterBackward,
  kAfterTrainBatch,
  kBatchEnd,
  kBatchCheckpoint,
  kEpochEnd,
  kEpochCheckpoint,
  kIterationEnd,
  kIterationCheckpoint,
  kFitEnd,
  kEvalBeforeAll,
  kEvalStart,
  kEvalBatchStart,
  kEvalBeforeForward,
  kEvalAfterForward,
  kEvalBatchEnd,
  kEvalEnd,
  kEvalAfterAll,
  kEvalStandaloneStart,
  kEvalStandaloneEnd,
  kPredictStart,
  kPredictBatchStart,
  kPredictBeforeForward,
  kPredictAfterForward,
  kPredictBatchEnd,
  kPredictEnd,
};

inline constexpr std::size_t kNumEvents = static_cast<std::size_t>(Event::kPredictEnd) + 1;

// Every event, in enumerator order.
const std::array<Event, kNumEvents>& all_events();

// "init", "before_load", … "predict_end". The string is also the name of the Callback method.
std::string_view to_string(Event event);

// The inverse of to_string. Throws std::invalid_argument naming the bad string.
Event parse_event(std::string_view name);

// The first event of a pair (fit_start, before_forward, eval_start, …). INIT and the
// *_checkpoint events belong to no pair and are neither before nor after events.
bool is_before_event(Event event);
bool is_after_event(Event event);

// Events fired while evaluating (eval_*) or predicting (predict_*).
bool is_eval(Event event);
bool is_predict(Event event);

// The name both events of a pair share: kEpochStart and kEpochEnd -> "epoch",
// kEvalBeforeForward -> "eval_forward", kInit -> "init".
std::string canonical_name(Event event);

}  // namespace baton
