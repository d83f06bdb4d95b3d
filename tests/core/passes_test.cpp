// The engine's passes (src/core/passes.cpp): the default order of algorithms, passes registered at an
// index, passes that drop algorithms.
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

TEST(Engine, SelectiveBackpropRunsFirstOnBeforeAndAfterEvents) {
  Fixture f({"A", "SelectiveBackprop", "B"}, {Event::kBeforeForward, Event::kAfterForward});
  f.engine.run_event(Event::kBeforeForward);
  f.engine.run_event(Event::kAfterForward);
  EXPECT_THAT(*f.log, ElementsAre("SelectiveBackprop:before_forward", "A:before_forward", "B:before_forward",
                                  "SelectiveBackprop:after_forward", "B:after_forward", "A:after_forward"));
}

TEST(Engine, LowPrecisionNormRunsLastOnBeforeAndAfterEvents) {
  Fixture f({"LowPrecisionLayerNorm", "A", "B"}, {Event::kBeforeForward, Event::kAfterForward});
  f.engine.run_event(Event::kBeforeForward);
  f.engine.run_event(Event::kAfterForward);
  EXPECT_THAT(*f.log, ElementsAre("A:before_forward", "B:before_forward", "LowPrecisionLayerNorm:before_forward",
                                  "B:after_forward", "A:after_forward", "LowPrecisionLayerNorm:after_forward"));
}

TEST(Engine, PassRegisteredAtIndexZeroRunsBeforeTheDefaults) {
  Fixture f({"A", "SelectiveBackprop"}, {Event::kBatchStart});
  std::vector<std::string> seen_first;
  std::vector<std::string> seen_last;
  auto record = [](std::vector<std::string>& into) {
    return [&into](std::vector<Algorithm*> algorithms, Event) {
      for (auto* a : algorithms) into.push_back(a->name());
      return algorithms;
    };
  };
  f.engine.register_pass(record(seen_first), 0);
  f.engine.register_pass(record(seen_last));
  f.engine.run_event(Event::kBatchStart);
  // The first pass sees State::algorithms order; the last sees the defaults' result.
  EXPECT_THAT(seen_first, ElementsAre("A", "SelectiveBackprop"));
  EXPECT_THAT(seen_last, ElementsAre("SelectiveBackprop", "A"));
  EXPECT_EQ(f.engine.passes().size(), 6u);
}

TEST(Engine, APassCanDropAlgorithms) {
  Fixture f({"A", "B"}, {Event::kBatchStart});
  f.engine.register_pass([](std::vector<Algorithm*> algorithms, Event) {
    std::erase_if(algorithms, [](Algorithm* a) { return a->name() == "A"; });
    return algorithms;
  });
  const Traces traces = f.engine.run_event(Event::kBatchStart);
  EXPECT_THAT(*f.log, ElementsAre("B:batch_start"));
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].first, "B/batch_start");
}

TEST(Engine, RegisterPassRefusesAnIndexPastTheEnd) {
  Fixture f;
  EXPECT_THROW(f.engine.register_pass([](std::vector<Algorithm*> a, Event) { return a; }, 5), std::out_of_range);
  EXPECT_THROW(f.engine.register_pass([](std::vector<Algorithm*> a, Event) { return a; }, -2), std::out_of_range);
  EXPECT_NO_THROW(f.engine.register_pass([](std::vector<Algorithm*> a, Event) { return a; }, 4));
}

}  // namespace
}  // namespace baton
