// Per-class scores and the confusion matrix (src/metrics/classification.cpp) against their definitions.
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/metrics/metrics.h"
#include "metrics/kinds.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

TEST(ClassScores, MatchTheirDefinitions) {
  // 3 classes; class 2 never true, class 1 never predicted.
  const at::Tensor logits = torch::tensor({{5.f, 0.f, 0.f}, {5.f, 0.f, 0.f}, {0.f, 0.f, 5.f}, {5.f, 0.f, 0.f}});
  const at::Tensor y = torch::tensor({0, 1, 0, 0});
  auto score = [&](const std::string& name) {
    auto m = make_metric(name);
    m->update(logits, y);
    return m->compute();
  };
  // class 0: tp 2, predicted 3, true 3; class 1: tp 0, predicted 0, true 1; class 2: tp 0, predicted 1, true 0.
  EXPECT_NEAR(score("precision"), (2.0 / 3 + 0 + 0) / 3, 1e-12);
  EXPECT_NEAR(score("recall"), (2.0 / 3 + 0 + 0) / 3, 1e-12);
  EXPECT_NEAR(score("f1_macro"), (4.0 / 6 + 0 + 0) / 3, 1e-12);
  EXPECT_NEAR(score("f1_micro"), score("accuracy"), 1e-12);  // one class an example: micro F1 is accuracy
  EXPECT_THROW(score("f1_binary"), std::invalid_argument);   // three classes
  // One yes/no output: binary by default, the positive class's.
  MetricContext binary;
  binary.task = TaskKind::kBinary;
  auto f1 = make_metric("f1", binary);
  f1->update(torch::tensor({{1.f}, {-1.f}, {2.f}, {-3.f}}), torch::tensor({1.f, 1.f, 0.f, 0.f}));
  EXPECT_NEAR(f1->compute(), 2.0 * 1 / (2 + 2), 1e-12);  // tp 1, predicted 2, true 2
}

TEST(ClassScores, ARankThatSawNothingPadsWithZeros) {
  auto seen = make_metric("f1");
  seen->update(torch::tensor({{2.f, 0.f}, {0.f, 2.f}, {2.f, 0.f}}), torch::tensor({0, 1, 1}));
  auto nothing = make_metric("f1");
  std::vector<double> sums = seen->sums();
  const std::vector<double> other = nothing->sums();  // [flag] only
  ASSERT_EQ(other.size(), 1u);
  for (std::size_t i = 0; i < other.size(); ++i) sums[i] += other[i];  // padded: the rest add 0
  nothing->set_sums(sums);
  EXPECT_NEAR(nothing->compute(), seen->compute(), 1e-12);
}

TEST(ConfusionMatrix, CountsTruthAgainstPrediction) {
  auto m = make_metric("confusion_matrix");
  ASSERT_TRUE(m->is_table());
  m->update(torch::tensor({{2.f, 0.f, 0.f}, {2.f, 0.f, 0.f}, {0.f, 0.f, 2.f}}), torch::tensor({0, 1, 2}));
  EXPECT_EQ(m->table(), (std::vector<std::vector<double>>{{1, 0, 0}, {1, 0, 0}, {0, 0, 1}}));
  EXPECT_EQ(m->compute(), 3.0);
}

}  // namespace
}  // namespace baton
