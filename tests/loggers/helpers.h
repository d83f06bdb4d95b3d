// What several logger tests share: a state moved to a batch, the steps of a metrics.jsonl, and an XML check.
#pragma once

#include <algorithm>
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

// Tags balance (every <a> closed by </a> or self-closed), and attribute values are quoted.
inline bool well_formed(const std::string& xml) {
  std::vector<std::string> open;
  std::size_t i = 0;
  while ((i = xml.find('<', i)) != std::string::npos) {
    const std::size_t end = xml.find('>', i);
    if (end == std::string::npos) return false;
    const std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return false;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return false;
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
  }
  return open.empty();
}

}  // namespace baton::testing
