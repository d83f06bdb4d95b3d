// GradScaler on the CPU: scaling, unscaling, a forced overflow that skips the step and shrinks the
// scale, growth after good steps, and its state across a resume.
#include "baton/core/grad_scaler.h"

#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

struct Problem {
  torch::nn::Linear model{nullptr};
  std::shared_ptr<torch::optim::SGD> optimizer;
  at::Tensor x = torch::randn({8, 3}, at::detail::createCPUGenerator(1));
  at::Tensor y = torch::randn({8, 2}, at::detail::createCPUGenerator(2));

  Problem() {
    torch::manual_seed(0);
    model = torch::nn::Linear(3, 2);
    optimizer = std::make_shared<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  }
  at::Tensor loss() { return torch::mse_loss(model(x), y); }
  at::Tensor weight() { return model->weight.detach().clone(); }
};

TEST(GradScaler, ScaledGradientsUnscaleToTheTrueOnes) {
  Problem plain, scaled;
  plain.loss().backward();
  GradScaler scaler(GradScalerOptions().init_scale(1024.0));
  EXPECT_DOUBLE_EQ(scaler.get_scale(), 1024.0);
  scaler.scale(scaled.loss()).backward();
  EXPECT_TRUE(torch::allclose(scaled.model->weight.grad(), plain.model->weight.grad() * 1024.0));
  scaler.unscale(*scaled.optimizer);
  scaler.unscale(*scaled.optimizer);  // once per step
  EXPECT_TRUE(torch::allclose(scaled.model->weight.grad(), plain.model->weight.grad()));
  // A power-of-two scale is exact: the step is the plain step, bit for bit.
  EXPECT_TRUE(scaler.step(*scaled.optimizer));
  scaler.update();
  plain.optimizer->step();
  EXPECT_TRUE(torch::equal(scaled.weight(), plain.weight()));
  EXPECT_EQ(scaler.skipped_steps(), 0);
}

TEST(GradScaler, AnOverflowSkipsTheStepAndHalvesTheScale) {
  Problem p;
  GradScaler scaler;
  const at::Tensor before = p.weight();
  scaler.scale(p.loss()).backward();
  p.model->weight.mutable_grad()[0][0] = std::numeric_limits<float>::infinity();  // forced overflow
  EXPECT_FALSE(scaler.step(*p.optimizer));
  scaler.update();
  EXPECT_TRUE(torch::equal(p.weight(), before));
  EXPECT_DOUBLE_EQ(scaler.get_scale(), 32768.0);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  // NaN too; then a good step goes through at the smaller scale.
  p.optimizer->zero_grad();
  scaler.scale(p.loss()).backward();
  p.model->bias.mutable_grad()[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(scaler.step(*p.optimizer));
  scaler.update();
  EXPECT_DOUBLE_EQ(scaler.get_scale(), 16384.0);
  p.optimizer->zero_grad();
  scaler.scale(p.loss()).backward();
  EXPECT_TRUE(scaler.step(*p.optimizer));
  scaler.update();
  EXPECT_FALSE(torch::equal(p.weight(), before));
  EXPECT_DOUBLE_EQ(scaler.get_scale(), 16384.0);
}

TEST(GradScaler, GrowsAfterGrowthIntervalGoodStepsInARow) {
  Problem p;
  GradScaler scaler(GradScalerOptions().init_scale(8.0).growth_interval(3));
  for (int i = 0; i < 3; ++i) {
    p.optimizer->zero_grad();
    scaler.scale(p.loss()).backward();
    scaler.step(*p.optimizer);
    scaler.update();
    EXPECT_DOUBLE_EQ(scaler.get_scale(), i < 2 ? 8.0 : 16.0) << "after step " << i + 1;
  }
}

TEST(GradScaler, StateRoundTripsAndBadStateIsRefused) {
  GradScaler a(GradScalerOptions().init_scale(4.0).growth_interval(10));
  Problem p;
  for (int i = 0; i < 4; ++i) {
    p.optimizer->zero_grad();
    a.scale(p.loss()).backward();
    a.step(*p.optimizer);
    a.update();
  }
  GradScaler b(GradScalerOptions().init_scale(4.0).growth_interval(10));
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(b.state_dict(), a.state_dict());
  EXPECT_EQ(a.state_dict()["growth_tracker"], 4);
  EXPECT_THAT(error_of([&] {
                b.load_state_dict({{"scale", -1.0}});
              }),
              HasSubstr("'scale' is missing or not a positive"));
  EXPECT_THAT(error_of([&] { b.load_state_dict(nlohmann::json::array()); }), HasSubstr("'scale'"));
}

TEST(GradScaler, RefusesBadOptions) {
  EXPECT_THAT(error_of([] { GradScaler s(GradScalerOptions().init_scale(0.0)); }), HasSubstr("init_scale"));
  EXPECT_THAT(error_of([] { GradScaler s(GradScalerOptions().growth_factor(1.0)); }), HasSubstr("growth_factor"));
  EXPECT_THAT(error_of([] { GradScaler s(GradScalerOptions().backoff_factor(1.0)); }), HasSubstr("backoff_factor"));
  EXPECT_THAT(error_of([] { GradScaler s(GradScalerOptions().growth_interval(0)); }), HasSubstr("growth_interval"));
}

}  // namespace
}  // namespace baton
