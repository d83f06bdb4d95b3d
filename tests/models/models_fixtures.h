// What gpt_test.cpp and zoo_test.cpp share.
#pragma once

#include "baton/models/zoo.h"

#include <cmath>
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/metrics/metrics.h"
#include "common/test_util.h"

namespace baton::models_fixtures {

inline int64_t count_parameters(Model& model) {
  int64_t n = 0;
  for (const auto& p : model.parameters()) n += p.numel();
  return n;
}

}  // namespace baton::models_fixtures
