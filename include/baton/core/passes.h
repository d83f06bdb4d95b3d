// Algorithm passes: functions that order (or filter) the algorithms matched on an event.
//
// The engine runs the matched algorithms through its passes, in order, before applying them.
// Passes must be pure functions of their arguments: the engine caches their result for each
// event and set of matched algorithms (register_pass and a change of State::algorithms clear it).
//
//   engine.register_pass([](std::vector<baton::Algorithm*> algos, baton::Event) {
//     return baton::sort_to_front(std::move(algos), "MyAlgorithm");
//   }, 0);
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "baton/core/event.h"

namespace baton {

class Algorithm;

using AlgorithmPass = std::function<std::vector<Algorithm*>(std::vector<Algorithm*>, Event)>;

// Stable: algorithms named `name` move to the front, the others keep their order.
std::vector<Algorithm*> sort_to_front(std::vector<Algorithm*> algorithms, std::string_view name);

// SelectiveBackprop drops examples before anything else sees the batch: it runs first.
std::vector<Algorithm*> sort_selective_backprop_first(std::vector<Algorithm*> algorithms, Event event);
// LowPrecisionLayerNorm / LowPrecisionGroupNorm replace modules other surgery may add: last.
std::vector<Algorithm*> sort_low_precision_norm_last(std::vector<Algorithm*> algorithms, Event event);
// On after_* events the algorithms run in reverse (first in, last out), except that the
// ones pinned by the two passes above stay pinned (Composer reverses them too; baton does not).
std::vector<Algorithm*> set_filo_order(std::vector<Algorithm*> algorithms, Event event);
// Warns (once per event) when more than one algorithm with interpolate_loss() runs.
AlgorithmPass warn_if_multiple_loss_interpolation();

// The four passes above, in that order.
std::vector<AlgorithmPass> default_passes();

}  // namespace baton
