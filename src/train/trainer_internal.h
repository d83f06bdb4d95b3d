// What src/train/trainer.cpp (the loop) and src/train/trainer_checkpoint.cpp (its checkpoint I/O)
// share. Private to src/train.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>

namespace baton::detail {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A refused option: std::invalid_argument with `what` (the option, the value, the fix).
inline void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

// LibTorch's errors carry a C++ stack; a user needs the first line.
inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace baton::detail
