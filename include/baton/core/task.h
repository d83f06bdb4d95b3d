// Task: what a model's outputs and a data set's targets are. It decides which losses and metrics fit
// (an r2 on class logits, an accuracy on regression outputs are errors before anything trains).
//
//   kClasses     outputs: logits [N, C] (or [N, T, C] for sequences); targets: class indices [N]
//                (or per-class probabilities [N, C], as label smoothing and MixUp make them)
//   kBinary      outputs: logits [N, K], one independent yes/no a column (K = 1: binary, K > 1:
//                multi-label); targets: 0/1 values [N, K] (class indices [N] are one-hot encoded)
//   kRegression  outputs: values [N, K]; targets: values [N, K] ([N] when K = 1)
#pragma once

#include <string>

namespace baton {

enum class TaskKind { kClasses, kBinary, kRegression };

// "classes", "binary" or "regression".
inline std::string to_string(TaskKind task) {
  switch (task) {
    case TaskKind::kBinary: return "binary";
    case TaskKind::kRegression: return "regression";
    case TaskKind::kClasses: break;
  }
  return "classes";
}

}  // namespace baton
