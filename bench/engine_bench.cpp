// The engine's cost per event: one run_event per iteration, cycling through the ten events of a
// training batch.
//
//   build/bin/engine_bench --benchmark_min_time=1
//
// BM_RunEvent_Empty:  no algorithms, one logger.
// BM_RunEvent_Loaded: eight algorithms (each matching one of the ten events), four callbacks and
//                     one logger.
// The reference engine (Composer, Python) costs 18 us and 35 us per event for these two cases.
#include <array>
#include <memory>

#include <benchmark/benchmark.h>

#include <filesystem>

#include "baton/callbacks/trace_profiler.h"
#include "baton/io/file.h"

#include "baton/baton.h"

namespace {

constexpr std::array<baton::Event, 10> kBatchEvents = {baton::Event::kBatchStart,      baton::Event::kBeforeTrainBatch,
                                                       baton::Event::kBeforeForward,   baton::Event::kAfterForward,
                                                       baton::Event::kBeforeLoss,      baton::Event::kAfterLoss,
                                                       baton::Event::kBeforeBackward,  baton::Event::kAfterBackward,
                                                       baton::Event::kAfterTrainBatch, baton::Event::kBatchEnd};

class OneEventAlgorithm : public baton::Algorithm {
 public:
  explicit OneEventAlgorithm(baton::Event event) : event_(event) {}
  std::string name() const override { return "Algorithm" + std::string(baton::to_string(event_)); }
  bool match(baton::Event event, const baton::State&) override { return event == event_; }
  std::optional<int> apply(baton::Event, baton::State&, baton::Logger&) override {
    ++applied_;
    return std::nullopt;
  }

 private:
  baton::Event event_;
  int64_t applied_ = 0;
};

class CountingCallback : public baton::Callback {
 public:
  void batch_start(baton::State&, baton::Logger&) override { ++count_; }
  void after_loss(baton::State&, baton::Logger&) override { ++count_; }
  void batch_end(baton::State&, baton::Logger&) override { ++count_; }

 private:
  int64_t count_ = 0;
};

class QuietLogger : public baton::LoggerDestination {
 public:
  void log_traces(const baton::Traces& traces) override { seen_ += static_cast<int64_t>(traces.size()); }

 private:
  int64_t seen_ = 0;
};

void run(benchmark::State& bench, baton::State& state) {
  baton::Logger logger(state);
  baton::Engine engine(state, logger);
  engine.run_event(baton::Event::kInit);
  std::size_t i = 0;
  for (auto _ : bench) {
    baton::Traces traces = engine.run_event(kBatchEvents[i]);
    benchmark::DoNotOptimize(traces);
    i = i + 1 == kBatchEvents.size() ? 0 : i + 1;
  }
  bench.SetItemsProcessed(bench.iterations());
}

void BM_RunEvent_Empty(benchmark::State& bench) {
  baton::State state;
  state.callbacks.push_back(std::make_shared<QuietLogger>());
  run(bench, state);
}
BENCHMARK(BM_RunEvent_Empty);

void BM_RunEvent_Loaded(benchmark::State& bench) {
  baton::State state;
  for (std::size_t i = 0; i < 8; ++i) state.algorithms.push_back(std::make_shared<OneEventAlgorithm>(kBatchEvents[i]));
  for (int i = 0; i < 4; ++i) state.callbacks.push_back(std::make_shared<CountingCallback>());
  state.callbacks.push_back(std::make_shared<QuietLogger>());
  run(bench, state);
}
BENCHMARK(BM_RunEvent_Loaded);

// The same with the trace profiler attached and recording every span (a fixed number of
// iterations, as the recorded spans are kept): what profiling costs per event when it is on.
void BM_RunEvent_Loaded_Profiled(benchmark::State& bench) {
  baton::State state;
  for (std::size_t i = 0; i < 8; ++i) state.algorithms.push_back(std::make_shared<OneEventAlgorithm>(kBatchEvents[i]));
  for (int i = 0; i < 4; ++i) state.callbacks.push_back(std::make_shared<CountingCallback>());
  state.callbacks.push_back(std::make_shared<QuietLogger>());
  const auto dir = std::filesystem::temp_directory_path() / "baton-engine-bench-traces";
  auto profiler = std::make_shared<baton::TraceProfiler>(
      baton::TraceProfilerOptions().folder(dir.string()).warmup(0).active(1 << 30).repeat(0));
  state.callbacks.push_back(profiler);
  baton::Logger logger(state);
  profiler->fit_start(state, logger);  // recording from now on
  run(bench, state);
  state.profiler.reset();
  baton::remove_tree(dir);
}
BENCHMARK(BM_RunEvent_Loaded_Profiled)->Iterations(200000);

}  // namespace

BENCHMARK_MAIN();
