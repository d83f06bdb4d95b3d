// Profiler: the interface the engine and the trainer report spans to.
//
// The engine opens "event/<canonical name>" on a before-event and closes it on the matching
// after-event, and wraps each algorithm in "algorithm/<Name>/event/<event>" and each callback
// in "callback/<Name>/event/<event>". With no profiler set (State::profiler == nullptr) none of
// this costs anything beyond one pointer test per event.
#pragma once

#include <string_view>

namespace baton {

class Profiler {
 public:
  virtual ~Profiler() = default;
  // Spans nest: a finish closes the most recent open span of that name.
  virtual void start(std::string_view name) = 0;
  virtual void finish(std::string_view name) = 0;
};

// Starts a span when constructed and finishes it when destroyed; does nothing without a profiler.
class ScopedMarker {
 public:
  ScopedMarker(Profiler* profiler, std::string_view name) : profiler_(profiler), name_(name) {
    if (profiler_ != nullptr) profiler_->start(name_);
  }
  ~ScopedMarker() {
    if (profiler_ != nullptr) profiler_->finish(name_);
  }
  ScopedMarker(const ScopedMarker&) = delete;
  ScopedMarker& operator=(const ScopedMarker&) = delete;

 private:
  Profiler* profiler_;
  std::string_view name_;
};

}  // namespace baton
