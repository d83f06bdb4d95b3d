// The wall-clock time trials are stamped with. Private to src/exec.
#pragma once

#include <chrono>

namespace baton {

// Seconds since the epoch (the system clock: stored times mean the same across processes).
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace baton
