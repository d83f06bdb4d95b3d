// What engine_test.cpp and middleware_test.cpp share.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "baton/exec/engine.h"
#include "baton/exec/middleware.h"

namespace baton::engine_fixtures {

inline TrialFunction report_x() {
  return [](TrialContext& t) { t.report_final(t.parameters().at("x").get<double>()); };
}

}  // namespace baton::engine_fixtures
