// What engine_test.cpp and passes_test.cpp share.
#pragma once

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
#include "core/test_helpers.h"

namespace baton::engine_fixtures {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Log;
using testing::RecordingAlgorithm;
using testing::RecordingCallback;
using testing::RecordingLogger;

// A State, Logger and Engine with algorithms named after `names`, each matching `events`.
struct Fixture {
  explicit Fixture(const std::vector<std::string>& names = {}, std::set<Event> events = {}) {
    for (const auto& name : names) state.algorithms.push_back(std::make_shared<RecordingAlgorithm>(name, events, log));
  }
  std::shared_ptr<Log> log = std::make_shared<Log>();
  State state;
  Logger logger{state};
  Engine engine{state, logger};
};

}  // namespace baton::engine_fixtures
