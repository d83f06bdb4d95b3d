// The metrics of decisions and values (src/metrics/) against their definitions (brute force where there
// is one); tests/cli/losses_metrics_test.sh compares them with scikit-learn.
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

TEST(Regression, MseMaeR2AsDefined) {
  MetricContext values;
  values.task = TaskKind::kRegression;
  const at::Tensor out = torch::tensor({{1.0f, 0.0f}, {2.0f, 1.0f}, {4.0f, 2.0f}});
  const at::Tensor y = torch::tensor({{1.0f, 0.5f}, {3.0f, 0.5f}, {5.0f, 0.5f}});  // column 2 constant
  auto get = [&](const std::string& name) {
    auto m = make_metric(name, values);
    m->update(out.slice(0, 0, 1), y.slice(0, 0, 1));
    m->update(out.slice(0, 1), y.slice(0, 1));
    return m->compute();
  };
  EXPECT_NEAR(get("mse"), (0 + 1 + 1 + 0.25 + 0.25 + 2.25) / 6, 1e-12);
  EXPECT_NEAR(get("mae"), (0 + 1 + 1 + 0.5 + 0.5 + 1.5) / 6, 1e-12);
  // column 1: SSE 2, SST 8 -> 0.75; column 2 constant and missed -> 0 (scikit-learn's force_finite).
  EXPECT_NEAR(get("r2"), (0.75 + 0.0) / 2, 1e-12);
  auto exact = make_metric("r2", values);
  exact->update(y, y);
  EXPECT_NEAR(exact->compute(), 1.0, 1e-12);
}

TEST(Metrics, ThatDoNotFitTheOutputsAreRefusedByName) {
  MetricContext values;
  values.task = TaskKind::kRegression;
  values.loss_name = "mse";
  EXPECT_THAT([&] { make_metric("accuracy", values); },
              ::testing::ThrowsMessage<std::invalid_argument>(
                  HasSubstr("metric 'accuracy' needs class logits or yes/no logits, but loss mse gives values")));
  EXPECT_THAT([] { make_metric("r2"); }, ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr(
                                             "metric 'r2' needs values, but loss cross_entropy gives class logits")));
  MetricContext binary;
  binary.task = TaskKind::kBinary;
  EXPECT_THROW(make_metric("perplexity", binary), std::invalid_argument);
  EXPECT_THROW(make_metric("top5_accuracy", binary), std::invalid_argument);
  EXPECT_NO_THROW(make_metric("loss", values));
}

}  // namespace
}  // namespace baton
