#include "baton/core/engine.h"

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "baton/core/algorithm.h"
#include "baton/core/callback.h"
#include "baton/core/logger.h"
#include "baton/core/state.h"

namespace baton {

// The passes' result for one event and one set of matched algorithms, with the strings the
// traces and profiler need, built once.
struct CompiledPasses {
  std::vector<Algorithm*> order;
  Traces traces;  // run == true, exit_code empty; filled in per run
  std::vector<std::string> marker_names;
};

struct CompiledEntry {
  uint64_t mask;
  CompiledPasses compiled;
};

struct Engine::Impl {
  Impl(State& state, Logger& logger) : state_(state), logger_(logger) {}
  State& state_;
  Logger& logger_;
  std::vector<AlgorithmPass> passes_;
  bool closed_ = false;
  bool debug_ = false;
  // Snapshots of State::algorithms / State::callbacks, refreshed when those change.
  std::vector<const void*> algorithm_ids_;
  std::vector<Algorithm*> algorithms_;
  std::vector<const void*> callback_ids_;
  std::vector<Callback*> callbacks_in_order_;    // non-loggers, then loggers
  std::vector<Callback*> callbacks_init_order_;  // loggers, then non-loggers
  // Per event: the passes' result for each matched set seen so far.
  std::vector<std::vector<CompiledEntry>> cache_ = std::vector<std::vector<CompiledEntry>>(kNumEvents);
  // The passes' order of the `matched` algorithms for `event`, from the cache or compiled now.
  const CompiledPasses& compile(Event event, uint64_t mask, const std::vector<Algorithm*>& matched);
};

const std::vector<AlgorithmPass>& Engine::passes() const { return impl_->passes_; }
bool Engine::closed() const { return impl_->closed_; }

namespace {

// More algorithms than bits in the mask: compile every time instead of caching.
constexpr std::size_t kMaxCachedAlgorithms = 64;

const std::string& event_marker_name(Event event) {
  static const auto names = [] {
    std::vector<std::string> out;
    for (Event e : all_events()) out.push_back("event/" + canonical_name(e));
    return out;
  }();
  return names[static_cast<std::size_t>(event)];
}

bool env_flag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' && std::string(value) != "0";
}

}  // namespace

Engine::Engine(State& state, Logger& logger, std::vector<AlgorithmPass> extra_passes)
    : impl_(std::make_unique<Impl>(state, logger)) {
  impl_->passes_ = default_passes();
  impl_->debug_ = env_flag("BATON_ENGINE_DEBUG");
  for (auto& pass : extra_passes) impl_->passes_.push_back(std::move(pass));
}

Engine::~Engine() { close(); }

void Engine::register_pass(AlgorithmPass pass, int index) {
  if (index == -1) {
    impl_->passes_.push_back(std::move(pass));
  } else if (index < 0 || static_cast<std::size_t>(index) > impl_->passes_.size()) {
    throw std::out_of_range("Engine::register_pass: index " + std::to_string(index) + " is outside 0.." +
                            std::to_string(impl_->passes_.size()) + " (use -1 to append)");
  } else {
    impl_->passes_.insert(impl_->passes_.begin() + index, std::move(pass));
  }
  for (auto& entries : impl_->cache_) entries.clear();
}

void Engine::refresh_algorithms() {
  const auto& current = impl_->state_.algorithms;
  bool same = current.size() == impl_->algorithm_ids_.size();
  for (std::size_t i = 0; same && i < current.size(); ++i) same = current[i].get() == impl_->algorithm_ids_[i];
  if (same) return;
  impl_->algorithm_ids_.clear();
  impl_->algorithms_.clear();
  for (const auto& a : current) {
    if (!a) throw std::invalid_argument("State::algorithms holds a null algorithm");
    impl_->algorithm_ids_.push_back(a.get());
    impl_->algorithms_.push_back(a.get());
  }
  for (auto& entries : impl_->cache_) entries.clear();
}

void Engine::refresh_callbacks() {
  const auto& current = impl_->state_.callbacks;
  bool same = current.size() == impl_->callback_ids_.size();
  for (std::size_t i = 0; same && i < current.size(); ++i) same = current[i].get() == impl_->callback_ids_[i];
  if (same) return;
  impl_->callback_ids_.clear();
  impl_->callbacks_in_order_.clear();
  impl_->callbacks_init_order_.clear();
  std::vector<Callback*> loggers;
  std::vector<Callback*> others;
  for (const auto& c : current) {
    if (!c) throw std::invalid_argument("State::callbacks holds a null callback");
    impl_->callback_ids_.push_back(c.get());
    (c->is_logger_destination() ? loggers : others).push_back(c.get());
  }
  impl_->callbacks_in_order_ = others;
  impl_->callbacks_in_order_.insert(impl_->callbacks_in_order_.end(), loggers.begin(), loggers.end());
  impl_->callbacks_init_order_ = loggers;
  impl_->callbacks_init_order_.insert(impl_->callbacks_init_order_.end(), others.begin(), others.end());
}

const CompiledPasses& Engine::Impl::compile(Event event, uint64_t mask, const std::vector<Algorithm*>& matched) {
  auto& entries = cache_[static_cast<std::size_t>(event)];
  for (const auto& entry : entries) {
    if (entry.mask == mask) return entry.compiled;
  }
  CompiledPasses compiled;
  compiled.order = matched;
  for (const auto& pass : passes_) compiled.order = pass(std::move(compiled.order), event);
  std::string suffix = "/";
  suffix.append(to_string(event));
  int order = 0;
  for (Algorithm* a : compiled.order) {
    std::string name = a->name();
    std::string marker = "algorithm/";
    marker.append(name).append("/event/").append(to_string(event));
    compiled.marker_names.push_back(std::move(marker));
    compiled.traces.emplace_back(name + suffix, Trace{name, event, std::nullopt, order++, true});
  }
  if (mask == ~uint64_t{0}) {  // uncachable: keep only the latest
    entries.clear();
  }
  entries.push_back({mask, std::move(compiled)});
  return entries.back().compiled;
}

Traces Engine::run_algorithms(Event event) {
  refresh_algorithms();
  if (impl_->algorithms_.empty()) return {};
  std::vector<Algorithm*> matched;
  uint64_t mask = 0;
  const bool cachable = impl_->algorithms_.size() <= kMaxCachedAlgorithms;
  for (std::size_t i = 0; i < impl_->algorithms_.size(); ++i) {
    if (impl_->algorithms_[i]->match(event, impl_->state_)) {
      matched.push_back(impl_->algorithms_[i]);
      if (cachable) mask |= uint64_t{1} << i;
    }
  }
  if (matched.empty()) return {};
  const CompiledPasses& compiled = impl_->compile(event, cachable ? mask : ~uint64_t{0}, matched);
  if (compiled.order.empty()) return {};

  Traces traces = compiled.traces;
  Profiler* profiler = impl_->state_.profiler.get();
  for (std::size_t i = 0; i < compiled.order.size(); ++i) {
    Algorithm* algorithm = compiled.order[i];
    if (impl_->debug_) debug_log(event, "Running algorithm " + traces[i].second.name);
    ScopedMarker marker(profiler, compiled.marker_names[i]);
    traces[i].second.exit_code = algorithm->apply(event, impl_->state_, impl_->logger_);
  }
  impl_->logger_.log_traces(traces);
  return traces;
}

void Engine::run_callbacks(Event event, bool loggers_first) {
  refresh_callbacks();
  Profiler* profiler = impl_->state_.profiler.get();
  for (Callback* callback : loggers_first ? impl_->callbacks_init_order_ : impl_->callbacks_in_order_) {
    if (impl_->debug_) debug_log(event, "Running callback " + callback->name());
    if (profiler != nullptr) {
      const std::string marker_name = "callback/" + callback->name() + "/event/" + std::string(to_string(event));
      ScopedMarker marker(profiler, marker_name);
      callback->run_event(event, impl_->state_, impl_->logger_);
    } else {
      callback->run_event(event, impl_->state_, impl_->logger_);
    }
  }
}

void Engine::claim_callbacks() {
  refresh_callbacks();
  std::vector<Callback*> claimed;
  for (Callback* callback : impl_->callbacks_init_order_) {
    const Engine* expected = nullptr;
    if (callback->open_in_.compare_exchange_strong(expected, this) || expected == this) {
      claimed.push_back(callback);
      continue;
    }
    for (Callback* c : claimed) c->open_in_.store(nullptr);
    throw std::logic_error("callback '" + callback->name() +
                           "' is still open in another engine: close that engine (Trainer::close()) before reusing "
                           "its callbacks or loggers");
  }
}

void Engine::release_callbacks() {
  for (const auto& callback : impl_->state_.callbacks) {
    if (!callback) continue;
    const Engine* expected = this;
    callback->open_in_.compare_exchange_strong(expected, nullptr);
  }
}

Traces Engine::run_event(Event event) {
  if (impl_->closed_) {
    throw std::logic_error("Engine::run_event(" + std::string(to_string(event)) +
                           "): the engine is closed; create a new Engine (and Trainer) to run again");
  }
  Profiler* profiler = impl_->state_.profiler.get();
  if (profiler != nullptr && is_before_event(event)) profiler->start(event_marker_name(event));
  if (impl_->debug_) debug_log(event, "Running event");

  Traces traces;
  if (event == Event::kInit) {
    claim_callbacks();
    run_callbacks(event, /*loggers_first=*/true);
    traces = run_algorithms(event);
  } else {
    traces = run_algorithms(event);
    run_callbacks(event, /*loggers_first=*/false);
  }

  if (profiler != nullptr && is_after_event(event)) profiler->finish(event_marker_name(event));
  return traces;
}

void Engine::close() {
  if (impl_->closed_) return;
  impl_->closed_ = true;
  std::vector<Callback*> succeeded;
  for (const auto& callback : impl_->state_.callbacks) {
    // A callback open in another engine is that engine's to close.
    if (!callback) continue;
    const Engine* owner = callback->open_in_.load();
    if (owner != nullptr && owner != this) continue;
    try {
      callback->close(impl_->state_, impl_->logger_);
      succeeded.push_back(callback.get());
    } catch (const std::exception& e) {
      spdlog::error("{}.close() failed: {}; skipping its post_close()", callback->name(), e.what());
    } catch (...) {
      spdlog::error("{}.close() failed with an unknown exception; skipping its post_close()", callback->name());
    }
  }
  for (Callback* callback : succeeded) {
    try {
      callback->post_close();
    } catch (const std::exception& e) {
      spdlog::error("{}.post_close() failed: {}", callback->name(), e.what());
    } catch (...) {
      spdlog::error("{}.post_close() failed with an unknown exception", callback->name());
    }
  }
  release_callbacks();
}

void Engine::debug_log(Event event, const std::string& what) const {
  spdlog::info("[ep={}][ba={}][event={}]: {}", impl_->state_.timestamp.epoch(), impl_->state_.timestamp.batch(),
               to_string(event), what);
}

}  // namespace baton
