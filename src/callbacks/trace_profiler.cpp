#include "baton/callbacks/trace_profiler.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "baton/core/state.h"

namespace baton {

struct TraceProfiler::Impl {
  TraceProfilerOptions options_;
  std::mutex mutex_;
  bool recording_ = false;
  std::vector<Span> events_;
  std::vector<std::pair<std::string, bool>> open_;  // per span start: its name, whether recorded
  std::string window_name_;
  std::vector<std::string> files_;
  std::vector<std::thread::id> threads_;
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
};

TraceProfiler::~TraceProfiler() = default;

const std::vector<std::string>& TraceProfiler::files() const { return impl_->files_; }
const std::string& TraceProfiler::folder() const { return impl_->options_.folder(); }
void TraceProfiler::set_folder(std::string folder) { impl_->options_.folder(std::move(folder)); }

TraceProfiler::TraceProfiler(TraceProfilerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options_ = std::move(options);
  for (int64_t v :
       {impl_->options_.skip_first(), impl_->options_.wait(), impl_->options_.warmup(), impl_->options_.repeat()}) {
    if (v < 0) throw std::invalid_argument("skip_first, wait, warmup and repeat must be at least 0");
  }
  if (impl_->options_.active() < 1) throw std::invalid_argument("active must be at least 1");
}

int TraceProfiler::phase(int64_t step) const {
  if (step < impl_->options_.skip_first()) return 0;
  const int64_t cycle = impl_->options_.wait() + impl_->options_.warmup() + impl_->options_.active();
  const int64_t k = step - impl_->options_.skip_first();
  if (impl_->options_.repeat() > 0 && k >= cycle * impl_->options_.repeat()) return 0;
  const int64_t in = k % cycle;
  if (in < impl_->options_.wait()) return 0;
  return in < impl_->options_.wait() + impl_->options_.warmup() ? 1 : 2;
}

double TraceProfiler::now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - impl_->origin_).count();
}

int TraceProfiler::tid() {
  const auto id = std::this_thread::get_id();
  const auto it = std::find(impl_->threads_.begin(), impl_->threads_.end(), id);
  if (it != impl_->threads_.end()) return static_cast<int>(it - impl_->threads_.begin()) + 1;
  impl_->threads_.push_back(id);
  return static_cast<int>(impl_->threads_.size());
}

void TraceProfiler::start(std::string_view name) {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  impl_->open_.emplace_back(std::string(name), impl_->recording_);
  if (impl_->recording_) impl_->events_.push_back({std::string(name), 'B', now_us(), tid()});
}

void TraceProfiler::finish(std::string_view name) {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  // The most recent open span of that name.
  for (auto it = impl_->open_.rbegin(); it != impl_->open_.rend(); ++it) {
    if (it->first != name) continue;
    if (it->second) impl_->events_.push_back({std::string(name), 'E', now_us(), tid()});
    impl_->open_.erase(std::next(it).base());
    return;
  }
}

void TraceProfiler::init(State& state, Logger& /*logger*/) {
  std::error_code ec;
  std::filesystem::create_directories(impl_->options_.folder(), ec);
  if (ec)
    throw std::runtime_error(impl_->options_.folder() + ": cannot create the traces folder (" + ec.message() + ")");
  state.profiler = std::shared_ptr<Profiler>(shared_from_this(), static_cast<Profiler*>(this));
}

// Whether the batch about to start is recorded: decided before its events fire, so its
// event/batch span is in the trace.
void TraceProfiler::decide(int64_t next_step, const State& state) {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  const bool record = phase(next_step) == 2;
  if (record && !impl_->recording_ && impl_->events_.empty()) {
    impl_->window_name_ =
        "ep" + std::to_string(state.timestamp.epoch()) + "-ba" + std::to_string(state.timestamp.batch());
  }
  impl_->recording_ = record;
}

void TraceProfiler::fit_start(State& state, Logger& /*logger*/) { decide(state.timestamp.batch(), state); }

void TraceProfiler::batch_start(State& /*state*/, Logger& /*logger*/) {
  bool pending = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    pending = !impl_->recording_ && !impl_->events_.empty();
  }
  if (pending) flush();
}

void TraceProfiler::batch_end(State& state, Logger& /*logger*/) { decide(state.timestamp.batch(), state); }

void TraceProfiler::fit_end(State& /*state*/, Logger& /*logger*/) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    impl_->recording_ = false;
  }
  flush();
}

void TraceProfiler::close(State& state, Logger& logger) {
  fit_end(state, logger);
  if (state.profiler.get() == static_cast<Profiler*>(this)) state.profiler.reset();
}

void TraceProfiler::flush() {
  std::vector<Span> events;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    if (impl_->events_.empty()) return;
    // Spans of the window still open (an epoch that goes on): closed here, marked so.
    const double end = now_us();
    for (auto it = impl_->open_.rbegin(); it != impl_->open_.rend(); ++it) {
      if (it->second) {
        impl_->events_.push_back({it->first, 'E', end, 1});
        it->second = false;
      }
    }
    events.swap(impl_->events_);
  }
  nlohmann::json trace = {{"displayTimeUnit", "ms"}, {"traceEvents", nlohmann::json::array()}};
  for (const Span& s : events) {
    trace["traceEvents"].push_back({{"name", s.name},
                                    {"ph", std::string(1, s.phase)},
                                    {"ts", s.ts_us},
                                    {"pid", 1},
                                    {"tid", s.tid},
                                    {"cat", "baton"}});
  }
  const std::string path = (std::filesystem::path(impl_->options_.folder()) / (impl_->window_name_ + ".json")).string();
  std::ofstream out(path);
  out << trace.dump() << '\n';
  if (!out) {
    spdlog::warn("profiler: cannot write {}", path);
    return;
  }
  impl_->files_.push_back(path);
}

}  // namespace baton
