// Accuracy, cross entropy, top-k and regression metrics (src/metrics/metrics.cpp) against their
// definitions; tests/cli/losses_metrics_test.sh compares them with scikit-learn.
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/metrics/metrics.h"
#include "common/test_util.h"
#include "metrics/kinds.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

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

TEST(Metrics, AveragedOverEveryExampleNotOverBatches) {
  auto acc = make_metric("accuracy");
  auto ce = make_metric("loss");
  // A batch of 3 with 3 right, then a batch of 1 with 0 right: 3/4, not (1 + 0) / 2.
  auto good = torch::tensor({{5.f, 0.f}, {5.f, 0.f}, {0.f, 5.f}});
  acc->update(good, torch::tensor({0, 0, 1}));
  acc->update(torch::tensor({{5.f, 0.f}}), torch::tensor({1}));
  EXPECT_DOUBLE_EQ(acc->compute(), 0.75);
  auto a = torch::randn({3, 4});
  auto b = torch::randn({1, 4});
  ce->update(a, torch::tensor({0, 1, 2}));
  ce->update(b, torch::tensor({3}));
  const double expected =
      torch::nn::functional::cross_entropy(torch::cat({a, b}), torch::tensor({0, 1, 2, 3})).item<double>();
  EXPECT_NEAR(ce->compute(), expected, 1e-6);
  acc->reset();
  EXPECT_THROW(acc->compute(), std::logic_error);
}

TEST(Metrics, UpdatesNeverReadTheDevice) {
  // On the meta device every read of a value throws: updates pass only if their sums stay where
  // the outputs are (on a GPU: no wait for it per evaluation batch). compute() is the one read.
  const auto meta = torch::TensorOptions().device(c10::kMeta);
  for (const char* name : {"accuracy", "top2_accuracy", "loss"}) {
    auto m = make_metric(name);
    EXPECT_NO_THROW(m->update(torch::empty({4, 3}, meta), torch::empty({4}, meta.dtype(torch::kLong)))) << name;
    EXPECT_NO_THROW(m->update(torch::empty({2, 3}, meta), torch::empty({2}, meta.dtype(torch::kLong)))) << name;
    EXPECT_ANY_THROW(m->compute()) << name;
  }
}

TEST(Metrics, TopKAndNames) {
  auto m = make_metric("top2_accuracy");
  EXPECT_EQ(m->name(), "top2_accuracy");
  m->update(torch::tensor({{3.f, 2.f, 1.f}, {3.f, 2.f, 1.f}}), torch::tensor({1, 2}));
  EXPECT_DOUBLE_EQ(m->compute(), 0.5);
  EXPECT_EQ(make_metric("top10_accuracy")->name(), "top10_accuracy");
  EXPECT_EQ(metric_names(),
            (std::vector<std::string>{"accuracy", "loss", "precision", "recall", "f1", "auroc", "confusion_matrix",
                                      "mse", "mae", "r2", "perplexity", "top<k>_accuracy",
                                      "<precision|recall|f1>_<macro|micro|binary>"}));
  for (const char* bad :
       {"f2", "f1_weighted", "top0_accuracy", "top_accuracy", "topx_accuracy", "top99999999_accuracy", "top5"}) {
    EXPECT_THAT([&] { make_metric(bad); },
                ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr(
                    "unknown metric '" + std::string(bad) + "' (known: accuracy, loss, precision, recall, f1, auroc")));
  }
}

TEST(Metrics, SequencesCountEveryPosition) {
  auto acc = make_metric("accuracy");
  auto ce = make_metric("loss");
  const at::Tensor logits = torch::randn({2, 3, 4});
  const at::Tensor targets = logits.argmax(2);
  targets[0][0] = (targets[0][0].item<int64_t>() + 1) % 4;  // one wrong position of six
  acc->update(logits, targets);
  ce->update(logits, targets);
  EXPECT_NEAR(acc->compute(), 5.0 / 6.0, 1e-9);
  EXPECT_NEAR(ce->compute(),
              torch::nn::functional::cross_entropy(logits.flatten(0, 1), targets.flatten()).item<double>(), 1e-6);
}

}  // namespace
}  // namespace baton
