// Auroc (src/metrics/auroc.cpp) against its definition, the share of pairs ordered right, by brute
// force; tests/cli/losses_metrics_test.sh compares it with scikit-learn.
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/metrics/metrics.h"
#include "metrics/kinds.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

// The share of (positive, negative) pairs ordered right, ties half: AUROC by its definition.
double brute_auroc(const std::vector<double>& s, const std::vector<int>& y) {
  double right = 0, pairs = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    for (std::size_t j = 0; j < s.size(); ++j) {
      if (y[i] != 1 || y[j] != 0) continue;
      pairs += 1;
      right += s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0;
    }
  }
  return right / pairs;
}

TEST(Auroc, IsTheShareOfPairsOrderedRightTiesHalf) {
  torch::manual_seed(2);
  const at::Tensor logits = torch::randint(-5, 5, {300, 1}).to(torch::kFloat);  // many ties
  const at::Tensor y = torch::randint(0, 2, {300});
  Auroc auroc(TaskKind::kBinary);
  auroc.update(logits.slice(0, 0, 120), y.slice(0, 0, 120));
  auroc.update(logits.slice(0, 120), y.slice(0, 120));
  std::vector<double> s(300);
  std::vector<int> t(300);
  for (int i = 0; i < 300; ++i) {
    s[i] = logits[i][0].item<double>();
    t[i] = static_cast<int>(y[i].item<int64_t>());
  }
  EXPECT_NEAR(auroc.compute(), brute_auroc(s, t), 1e-12);
}

TEST(Auroc, ClassesAreOneVsRestOnSoftmaxAndRanksConcatenate) {
  torch::manual_seed(3);
  const at::Tensor logits = torch::randn({200, 4});
  const at::Tensor y = torch::randint(0, 4, {200});
  const at::Tensor p = torch::softmax(logits.to(torch::kDouble), 1);
  double sum = 0;
  for (int c = 0; c < 4; ++c) {
    std::vector<double> s(200);
    std::vector<int> t(200);
    for (int i = 0; i < 200; ++i) {
      s[i] = p[i][c].item<double>();
      t[i] = y[i].item<int64_t>() == c;
    }
    sum += brute_auroc(s, t);
  }
  Auroc whole(TaskKind::kClasses);
  whole.update(logits, y);
  EXPECT_NEAR(whole.compute(), sum / 4, 1e-12);
  // Two ranks' halves, their states one after another (as data parallelism gathers them).
  Auroc a(TaskKind::kClasses), b(TaskKind::kClasses), empty(TaskKind::kClasses), merged(TaskKind::kClasses);
  a.update(logits.slice(0, 0, 90), y.slice(0, 0, 90));
  b.update(logits.slice(0, 90), y.slice(0, 90));
  std::vector<double> states = a.sums();
  for (const auto& part : {empty.sums(), b.sums()}) states.insert(states.end(), part.begin(), part.end());
  merged.set_sums(states);
  EXPECT_NEAR(merged.compute(), whole.compute(), 1e-12);
}

TEST(Auroc, MemoryStaysBoundedAndCloseToExact) {
  torch::manual_seed(4);
  const at::Tensor logits = torch::randn({50000, 1}, torch::kDouble);
  const at::Tensor y = (logits.flatten() + torch::randn({50000}, torch::kDouble)).gt(0).to(torch::kLong);
  Auroc exact(TaskKind::kBinary);
  Auroc bounded(TaskKind::kBinary, 2048);
  for (int64_t at = 0; at < 50000; at += 5000) {
    exact.update(logits.slice(0, at, at + 5000), y.slice(0, at, at + 5000));
    bounded.update(logits.slice(0, at, at + 5000), y.slice(0, at, at + 5000));
  }
  EXPECT_EQ(exact.stored_scores(), 50000u);
  EXPECT_LE(bounded.stored_scores(), 2048u);
  EXPECT_NEAR(bounded.compute(), exact.compute(), 2e-3);  // scores rounded: ties count half
}

}  // namespace
}  // namespace baton
