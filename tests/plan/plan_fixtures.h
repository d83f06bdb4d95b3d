// What executor_test.cpp, local_session_test.cpp, task_test.cpp and workspace_test.cpp share.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/plan/session.h"

namespace baton::plan_fixtures {

using Steps = std::vector<std::shared_ptr<ExecutionStep>>;

inline std::shared_ptr<ExecutionStep> fn(const std::string& name, StepFunction f) {
  return ExecutionStep::make(name, std::move(f));
}

}  // namespace baton::plan_fixtures
