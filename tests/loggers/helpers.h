// What several logger tests share: a state moved to a batch, the steps of a metrics.jsonl.
#pragma once

#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/state.h"
#include "common/test_util.h"

namespace baton::testing {

// A state whose timestamp is at `batch`, as after a resume from a checkpoint of that batch.
inline void move_to_batch(State& state, int64_t batch) {
  for (int64_t b = 0; b < batch; ++b) state.timestamp = state.timestamp.to_next_batch(16, 0, 0.01);
}

// The steps of a metrics.jsonl's train/loss lines, in order.
inline std::vector<int64_t> loss_steps(const std::filesystem::path& path) {
  std::vector<int64_t> steps;
  std::istringstream lines(testing::read_file(path));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("train/loss")) steps.push_back(j["step"].get<int64_t>());
  }
  return steps;
}

}  // namespace baton::testing
