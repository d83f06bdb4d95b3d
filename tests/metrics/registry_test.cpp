// make_metric (src/metrics/registry.cpp): a metric that does not fit the outputs is refused by name.
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/metrics/metrics.h"
#include "metrics/kinds.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

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
