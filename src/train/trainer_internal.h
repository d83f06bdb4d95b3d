// What src/train/trainer.cpp (the loop) and src/train/trainer_checkpoint.cpp (its checkpoint I/O)
// share. Private to src/train.
#pragma once

#include <chrono>
#include <string>

namespace baton::detail {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// LibTorch's errors carry a C++ stack; a user needs the first line.
inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace baton::detail
