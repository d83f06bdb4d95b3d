// Helpers shared by baton's tests.
#pragma once

#include <exception>
#include <functional>
#include <string>

namespace baton::testing {

// The message of the exception `f` throws, or "no error".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace baton::testing
