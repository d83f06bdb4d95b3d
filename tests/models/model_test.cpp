// Classifier (src/models/model.cpp): soft targets and class indices give the same loss.
#include "baton/models/zoo.h"

#include <cmath>
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/metrics/metrics.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

TEST(Classifier, SoftTargetsGiveTheSameLossAsIndicesWhenOneHot) {
  auto logits = torch::randn({5, 3});
  auto idx = torch::tensor({0, 2, 1, 1, 0});
  auto one_hot = torch::one_hot(idx, 3).to(torch::kFloat);
  EXPECT_NEAR(soft_cross_entropy(logits, idx).item<double>(), soft_cross_entropy(logits, one_hot).item<double>(), 1e-6);
}

}  // namespace
}  // namespace baton
