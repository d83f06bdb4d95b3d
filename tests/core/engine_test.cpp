// The engine (src/core/engine.cpp): the order of algorithms, callbacks and loggers at each event,
// traces, closing, debug logs and profiler spans.
#include "baton/core/engine.h"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <spdlog/spdlog.h>
#include "common/test_util.h"

#include "baton/core/profiler.h"
#include "core/engine_fixtures.h"
#include "core/test_helpers.h"

namespace baton {
namespace {

using namespace engine_fixtures;  // NOLINT(google-build-using-namespace)

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Log;
using testing::RecordingAlgorithm;
using testing::RecordingCallback;
using testing::RecordingLogger;

using testing::CapturedLog;

TEST(Engine, BeforeEventsRunAlgorithmsInOrder) {
  Fixture f({"A", "B", "C"}, {Event::kBeforeLoss});
  f.engine.run_event(Event::kBeforeLoss);
  EXPECT_THAT(*f.log, ElementsAre("A:before_loss", "B:before_loss", "C:before_loss"));
}

TEST(Engine, AfterEventsRunAlgorithmsInReverse) {
  Fixture f({"A", "B", "C"}, {Event::kAfterLoss});
  f.engine.run_event(Event::kAfterLoss);
  EXPECT_THAT(*f.log, ElementsAre("C:after_loss", "B:after_loss", "A:after_loss"));
}

TEST(Engine, BatchStartAndBatchEndRunInOrder) {
  Fixture f({"A", "B", "C"}, {Event::kBatchStart, Event::kBatchEnd});
  f.engine.run_event(Event::kBatchStart);
  f.engine.run_event(Event::kBatchEnd);
  EXPECT_THAT(*f.log, ElementsAre("A:batch_start", "B:batch_start", "C:batch_start", "A:batch_end", "B:batch_end",
                                  "C:batch_end"));
}

TEST(Engine, InitRunsLoggersThenCallbacksThenAlgorithms) {
  Fixture f({"Algo"}, {Event::kInit, Event::kBatchEnd});
  f.state.callbacks.push_back(std::make_shared<RecordingCallback>("Callback", f.log));
  f.state.callbacks.push_back(std::make_shared<RecordingLogger>("Logger", f.log));
  f.engine.run_event(Event::kInit);
  EXPECT_THAT(*f.log, ElementsAre("Logger:init", "Callback:init", "Algo:init"));
}

TEST(Engine, OtherEventsRunAlgorithmsThenCallbacksThenLoggers) {
  Fixture f({"Algo"}, {Event::kBatchEnd});
  f.state.callbacks.push_back(std::make_shared<RecordingLogger>("Logger", f.log));
  f.state.callbacks.push_back(std::make_shared<RecordingCallback>("Callback1", f.log));
  f.state.callbacks.push_back(std::make_shared<RecordingCallback>("Callback2", f.log));
  f.engine.run_event(Event::kBatchEnd);
  EXPECT_THAT(*f.log, ElementsAre("Algo:batch_end", "Callback1:batch_end", "Callback2:batch_end", "Logger:batch_end"));
}

TEST(Engine, TracesHoldOnlyWhatRanInRunOrderWithExitCodes) {
  Fixture f;
  f.state.algorithms.push_back(std::make_shared<RecordingAlgorithm>("A", std::set{Event::kAfterLoss}, f.log, 3));
  f.state.algorithms.push_back(std::make_shared<RecordingAlgorithm>("Idle", std::set{Event::kBatchEnd}, f.log));
  f.state.algorithms.push_back(std::make_shared<RecordingAlgorithm>("B", std::set{Event::kAfterLoss}, f.log));
  const Traces traces = f.engine.run_event(Event::kAfterLoss);
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(traces[0].first, "B/after_loss");
  EXPECT_EQ(traces[0].second, (Trace{"B", Event::kAfterLoss, std::nullopt, 0, true}));
  EXPECT_EQ(traces[1].first, "A/after_loss");
  EXPECT_EQ(traces[1].second, (Trace{"A", Event::kAfterLoss, 3, 1, true}));
  EXPECT_THAT(f.engine.run_event(Event::kBeforeLoss), IsEmpty());
}

TEST(Engine, TracesGoToTheLoggerOnlyWhenSomethingRan) {
  Fixture f({"A"}, {Event::kBatchStart});
  auto destination = std::make_shared<RecordingLogger>("Dest", f.log);
  Logger logger(f.state, {destination});
  Engine engine(f.state, logger);
  engine.run_event(Event::kBatchStart);
  engine.run_event(Event::kBatchEnd);
  EXPECT_THAT(*f.log, ElementsAre("A:batch_start", "Dest:trace:A/batch_start"));
}

TEST(Engine, AlgorithmsChangeTheStateBeforeCallbacksSeeIt) {
  struct StopAtBatchEnd : Algorithm {
    bool match(Event e, const State&) override { return e == Event::kBatchEnd; }
    std::optional<int> apply(Event, State& s, Logger&) override {
      s.stop_training();
      return std::nullopt;
    }
  };
  struct Observer : Callback {
    void batch_end(State& s, Logger&) override { saw_stop = s.stop_requested(); }
    bool saw_stop = false;
  };
  Fixture f;
  auto observer = std::make_shared<Observer>();
  f.state.algorithms.push_back(std::make_shared<StopAtBatchEnd>());
  f.state.callbacks.push_back(observer);
  f.engine.run_event(Event::kBatchEnd);
  EXPECT_TRUE(observer->saw_stop);
}

TEST(Engine, SeesAlgorithmsAddedAfterItStarted) {
  Fixture f({"A"}, {Event::kBatchStart});
  f.engine.run_event(Event::kBatchStart);
  f.state.algorithms.push_back(std::make_shared<RecordingAlgorithm>("B", std::set{Event::kBatchStart}, f.log));
  f.engine.run_event(Event::kBatchStart);
  f.state.algorithms.erase(f.state.algorithms.begin());
  f.engine.run_event(Event::kBatchStart);
  EXPECT_THAT(*f.log, ElementsAre("A:batch_start", "A:batch_start", "B:batch_start", "B:batch_start"));
}

TEST(Engine, MatchIsAskedEveryTime) {
  // An algorithm that matches only every other call must not be cached as always matching.
  struct EveryOther : Algorithm {
    bool match(Event, const State&) override { return (calls++ % 2) == 0; }
    std::optional<int> apply(Event, State&, Logger&) override {
      ++applied;
      return std::nullopt;
    }
    int calls = 0;
    int applied = 0;
  };
  Fixture f;
  auto algorithm = std::make_shared<EveryOther>();
  f.state.algorithms.push_back(algorithm);
  for (int i = 0; i < 6; ++i) f.engine.run_event(Event::kBatchStart);
  EXPECT_EQ(algorithm->calls, 6);
  EXPECT_EQ(algorithm->applied, 3);
}

TEST(Engine, CloseReachesEveryCallbackAndPostClosesOnlyTheSuccessful) {
  Fixture f;
  f.state.callbacks.push_back(std::make_shared<RecordingCallback>("Good1", f.log));
  f.state.callbacks.push_back(std::make_shared<RecordingCallback>("Bad", f.log, /*throw_on_close=*/true));
  f.state.callbacks.push_back(std::make_shared<RecordingCallback>("Good2", f.log));
  CapturedLog captured;
  EXPECT_NO_THROW(f.engine.close());
  EXPECT_THAT(*f.log, ElementsAre("Good1:close", "Bad:close", "Good2:close", "Good1:post_close", "Good2:post_close"));
  EXPECT_THAT(captured.text(), HasSubstr("Bad failed to close"));
}

TEST(Engine, ClosedEngineRefusesRunEvent) {
  Fixture f;
  f.engine.close();
  EXPECT_TRUE(f.engine.closed());
  try {
    f.engine.run_event(Event::kBatchStart);
    FAIL();
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("closed"));
    EXPECT_THAT(e.what(), HasSubstr("batch_start"));
  }
}

TEST(Engine, CloseIsIdempotentAndTheDestructorCloses) {
  auto log = std::make_shared<Log>();
  State state;
  Logger logger(state);
  state.callbacks.push_back(std::make_shared<RecordingCallback>("C", log));
  {
    Engine engine(state, logger);
    engine.close();
    engine.close();
  }
  { Engine engine(state, logger); }
  EXPECT_THAT(*log, ElementsAre("C:close", "C:post_close", "C:close", "C:post_close"));
}

TEST(Engine, CallbackStillOpenInAnotherEngineIsRefused) {
  auto log = std::make_shared<Log>();
  auto shared_callback = std::make_shared<RecordingCallback>("Shared", log);
  State first_state;
  Logger first_logger(first_state);
  first_state.callbacks.push_back(shared_callback);
  Engine first(first_state, first_logger);
  first.run_event(Event::kInit);

  State second_state;
  Logger second_logger(second_state);
  second_state.callbacks.push_back(shared_callback);
  {
    Engine second(second_state, second_logger);
    try {
      second.run_event(Event::kInit);
      FAIL();
    } catch (const std::logic_error& e) {
      EXPECT_THAT(e.what(), HasSubstr("'Shared' is still open in another engine"));
    }
  }
  first.close();
  Engine third(second_state, second_logger);
  EXPECT_NO_THROW(third.run_event(Event::kInit));
}

TEST(Engine, MultipleLossInterpolationsWarnOncePerEvent) {
  auto log = std::make_shared<Log>();
  State state;
  Logger logger(state);
  state.algorithms.push_back(
      std::make_shared<RecordingAlgorithm>("MixUp", std::set{Event::kAfterLoss}, log, std::nullopt, true));
  state.algorithms.push_back(
      std::make_shared<RecordingAlgorithm>("CutMix", std::set{Event::kAfterLoss}, log, std::nullopt, true));
  CapturedLog captured;
  Engine engine(state, logger);
  engine.run_event(Event::kAfterLoss);
  engine.run_event(Event::kAfterLoss);
  const std::string text = captured.text();
  EXPECT_THAT(text, HasSubstr("2 algorithms interpolate the loss on after_loss (CutMix, MixUp)"));
  EXPECT_EQ(text.find("interpolate"), text.rfind("interpolate"));
}

TEST(Engine, DebugEnvironmentLogsEveryHook) {
  ::setenv("BATON_ENGINE_DEBUG", "1", 1);
  Fixture f({"A"}, {Event::kBatchStart});
  ::unsetenv("BATON_ENGINE_DEBUG");
  f.state.callbacks.push_back(std::make_shared<RecordingCallback>("C", f.log));
  f.state.timestamp = f.state.timestamp.to_next_batch(4);
  CapturedLog captured;
  f.engine.run_event(Event::kBatchStart);
  EXPECT_THAT(captured.text(), HasSubstr("[ep=0][ba=1][event=batch_start]: Running algorithm A"));
  EXPECT_THAT(captured.text(), HasSubstr("[ep=0][ba=1][event=batch_start]: Running callback C"));
}

TEST(Engine, NoDebugLogsWithoutTheEnvironmentVariable) {
  Fixture f({"A"}, {Event::kBatchStart});
  CapturedLog captured;
  f.engine.run_event(Event::kBatchStart);
  EXPECT_EQ(captured.text(), "");
}

class RecordingProfiler : public Profiler {
 public:
  void start(std::string_view name) override { log.push_back("start " + std::string(name)); }
  void finish(std::string_view name) override { log.push_back("finish " + std::string(name)); }
  Log log;
};

TEST(Engine, ReportsEventAlgorithmAndCallbackSpansToTheProfiler) {
  Fixture f({"A"}, {Event::kBeforeForward});
  f.state.callbacks.push_back(std::make_shared<RecordingCallback>("C", f.log));
  auto profiler = std::make_shared<RecordingProfiler>();
  f.state.profiler = profiler;
  f.engine.run_event(Event::kBeforeForward);
  f.engine.run_event(Event::kAfterForward);
  f.engine.run_event(Event::kInit);
  EXPECT_THAT(profiler->log,
              ElementsAre("start event/forward", "start algorithm/A/event/before_forward",
                          "finish algorithm/A/event/before_forward", "start callback/C/event/before_forward",
                          "finish callback/C/event/before_forward", "start callback/C/event/after_forward",
                          "finish callback/C/event/after_forward", "finish event/forward",
                          "start callback/C/event/init", "finish callback/C/event/init"));
}

TEST(Engine, RefusesNullAlgorithmsAndCallbacks) {
  Fixture f;
  f.state.algorithms.push_back(nullptr);
  EXPECT_THROW(f.engine.run_event(Event::kBatchStart), std::invalid_argument);
  f.state.algorithms.clear();
  f.state.callbacks.push_back(nullptr);
  EXPECT_THROW(f.engine.run_event(Event::kBatchStart), std::invalid_argument);
  f.state.callbacks.clear();
}

}  // namespace
}  // namespace baton
