// Losses by name against LibTorch's functions (src/models/loss.cpp); tests/cli/losses_metrics_test.sh
// compares them with scikit-learn on a trained model's predictions.
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/models/loss.h"

namespace baton {
namespace {

namespace F = torch::nn::functional;
using ::testing::HasSubstr;

double value(const at::Tensor& t) { return t.item<double>(); }

TEST(Loss, EachNameIsPyTorchsFunctionWithMeanReduction) {
  torch::manual_seed(1);
  const at::Tensor out = torch::randn({6, 3});
  const at::Tensor y = torch::randn({6, 3});
  const at::Tensor yes = torch::randint(0, 2, {6, 3}).to(torch::kFloat);
  EXPECT_NEAR(value(Loss::named("mse")(out, y)), value(F::mse_loss(out, y)), 1e-7);
  EXPECT_NEAR(value(Loss::named("l1")(out, y)), value(F::l1_loss(out, y)), 1e-7);
  EXPECT_NEAR(value(Loss::named("smooth_l1", 0.3)(out, y)),
              value(F::smooth_l1_loss(out, y, F::SmoothL1LossFuncOptions(), 0.3)), 1e-7);
  EXPECT_NEAR(value(Loss::named("binary_cross_entropy")(out, yes)),
              value(F::binary_cross_entropy_with_logits(out, yes)), 1e-7);
  const at::Tensor classes = torch::randint(0, 3, {6});
  EXPECT_NEAR(value(Loss()(out, classes)), value(F::cross_entropy(out, classes)), 1e-7);
  for (const auto& name : Loss::names()) {  // the mean of each example's loss is the loss
    const Loss loss = Loss::named(name);
    const at::Tensor target = name == "cross_entropy" ? classes : name == "binary_cross_entropy" ? yes : y;
    EXPECT_EQ(loss.per_example(out, target).sizes(), (std::vector<int64_t>{6})) << name;
    EXPECT_NEAR(value(loss.per_example(out, target).mean()), value(loss(out, target)), 1e-6) << name;
  }
}

TEST(Loss, TargetsTakeTheOutputsShape) {
  const at::Tensor out = torch::tensor({{0.5f}, {-1.0f}, {2.0f}});
  // Values [N] against one output [N, 1].
  EXPECT_NEAR(value(Loss::named("mse")(out, torch::tensor({1.0f, 0.0f, 2.0f}))), (0.25 + 1.0 + 0.0) / 3, 1e-7);
  // Class indices under binary_cross_entropy: the index itself (one output), one-hot (several).
  EXPECT_NEAR(value(Loss::named("binary_cross_entropy")(out, torch::tensor({1, 0, 1}))),
              value(F::binary_cross_entropy_with_logits(out, torch::tensor({{1.f}, {0.f}, {1.f}}))), 1e-7);
  const at::Tensor three = torch::randn({2, 3});
  EXPECT_NEAR(value(Loss::named("binary_cross_entropy")(three, torch::tensor({2, 0}))),
              value(F::binary_cross_entropy_with_logits(three, torch::tensor({{0.f, 0.f, 1.f}, {1.f, 0.f, 0.f}}))),
              1e-7);
  EXPECT_THAT(
      [&] {
        Loss::named("mse")(three, torch::zeros({2, 2}));
      },
      ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("outputs [2, 3] and targets [2, 2] do not fit")));
}

TEST(Loss, NamesTasksAndRefusals) {
  EXPECT_EQ(Loss().name(), "cross_entropy");
  EXPECT_EQ(Loss().task(), TaskKind::kClasses);
  EXPECT_EQ(Loss::named("binary_cross_entropy").task(), TaskKind::kBinary);
  EXPECT_EQ(Loss::named("l1").task(), TaskKind::kRegression);
  EXPECT_THAT([] { Loss::named("hinge"); },
              ::testing::ThrowsMessage<std::invalid_argument>(
                  HasSubstr("unknown loss 'hinge' (known: cross_entropy, binary_cross_entropy, mse, l1, smooth_l1)")));
  EXPECT_THROW(Loss::named("smooth_l1", -1.0), std::invalid_argument);
  EXPECT_THROW(Loss::named("smooth_l1", std::nan("")), std::invalid_argument);
}

}  // namespace
}  // namespace baton
