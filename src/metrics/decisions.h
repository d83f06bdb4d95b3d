// What a model decided and what was true, for the metrics of decisions (accuracy, precision,
// recall, F1, the confusion matrix): classes: the largest logit against the class index (soft
// targets: their largest probability); one yes/no output: logit > 0 against the 0/1 target, as two
// classes; several yes/no outputs (multi-label): each logit > 0 against its 0/1 target.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "baton/core/task.h"

namespace baton {

struct Decisions {
  at::Tensor predicted;  // int64: [N] class indices, or [N, K] 0/1 when multilabel
  at::Tensor truth;      // the same shape
  int64_t classes = 0;   // C, 2 for one yes/no output, K for multi-label
  bool multilabel = false;
};

// Throws std::invalid_argument for outputs that are not [N, C] (or [N, T, C]).
Decisions decide(const at::Tensor& outputs, const at::Tensor& targets, TaskKind task);

}  // namespace baton
