// The fused Adam and AdamW (src/optim/fused_adam.h) against LibTorch's own: the same parameters and
// state to rounding, over steps, a loaded state, amsgrad and coupled decay; where the LibTorch lacks
// the kernels (Debian's 1.13), fused: true is refused and the default is LibTorch's own.
#include "optim/fused_adam.h"

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/core/options.h"
#include "baton/optim/optimizers.h"

namespace baton {
namespace {

// Three parameters (a matrix, a vector, a scalar) from one seed.
std::vector<at::Tensor> parameters() {
  torch::manual_seed(3);
  return {torch::randn({5, 4}).requires_grad_(), torch::randn({7}).requires_grad_(), torch::randn({}).requires_grad_()};
}

// `steps` steps on a loss whose gradients change each step; the parameters after them.
std::vector<at::Tensor> train(torch::optim::Optimizer& optimizer, const std::vector<at::Tensor>& params, int steps,
                              int first = 0) {
  for (int s = first; s < first + steps; ++s) {
    optimizer.zero_grad();
    at::Tensor loss = torch::zeros({});
    for (std::size_t i = 0; i < params.size(); ++i)
      loss = loss + (params[i].pow(2) * (s + 1) * static_cast<double>(i + 1)).sum().sin();
    loss.backward();
    optimizer.step();
  }
  std::vector<at::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone());
  return out;
}

void expect_close(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-6)) << "parameter " << i << ": " << (a[i] - b[i]).abs().max();
  }
}

#define REQUIRE_FUSED() \
  if (!detail::fused_adam_built()) GTEST_SKIP() << "this LibTorch has no fused Adam kernels (2.4 or later has)"

TEST(FusedAdam, AdamwEqualsLibtorchsOverStepsWithItsState) {
  REQUIRE_FUSED();
  const auto options = torch::optim::AdamWOptions(0.05).weight_decay(0.1).betas({0.8, 0.95}).eps(1e-6);
  auto plain_params = parameters(), fused_params = parameters();
  torch::optim::AdamW plain(plain_params, options);
  detail::FusedAdamW fused(fused_params, options);
  expect_close(train(fused, fused_params, 6), train(plain, plain_params, 6));
  const auto plain_state = optimizer_param_state(plain, plain_params[0]);
  const auto fused_state = optimizer_param_state(fused, fused_params[0]);
  EXPECT_EQ(fused_state.at("step").item<int64_t>(), 6);
  EXPECT_TRUE(torch::allclose(fused_state.at("exp_avg"), plain_state.at("exp_avg"), 1e-5, 1e-7));
  EXPECT_TRUE(torch::allclose(fused_state.at("exp_avg_sq"), plain_state.at("exp_avg_sq"), 1e-5, 1e-9));
}

TEST(FusedAdam, AdamsCoupledDecayAndAmsgradEqualLibtorchs) {
  REQUIRE_FUSED();
  const auto options = torch::optim::AdamOptions(0.02).weight_decay(0.3).amsgrad(true);
  auto plain_params = parameters(), fused_params = parameters();
  torch::optim::Adam plain(plain_params, options);
  detail::FusedAdam fused(fused_params, options);
  expect_close(train(fused, fused_params, 8), train(plain, plain_params, 8));
  EXPECT_TRUE(torch::allclose(optimizer_param_state(fused, fused_params[1]).at("max_exp_avg_sq"),
                              optimizer_param_state(plain, plain_params[1]).at("max_exp_avg_sq"), 1e-5, 1e-9));
}

// A state put in between steps (a checkpoint loaded, a shard's state set) is the one the next step
// starts from: its step count too, which the fused step keeps as a tensor of its own.
TEST(FusedAdam, AStateSetBetweenStepsIsWhereTheNextStepStarts) {
  REQUIRE_FUSED();
  const auto options = torch::optim::AdamWOptions(0.05).weight_decay(0.01);
  auto plain_params = parameters(), fused_params = parameters();
  torch::optim::AdamW plain(plain_params, options);
  detail::FusedAdamW fused(fused_params, options);
  train(plain, plain_params, 3);
  train(fused, fused_params, 5);  // a count and moments that must be replaced
  for (std::size_t i = 0; i < plain_params.size(); ++i) {
    torch::NoGradGuard no_grad;
    fused_params[i].copy_(plain_params[i]);
    auto state = optimizer_param_state(plain, plain_params[i]);
    for (auto& [name, tensor] : state) tensor = tensor.clone();  // the two must not share moments
    set_optimizer_param_state(fused, fused_params[i], state);
  }
  expect_close(train(fused, fused_params, 4, 3), train(plain, plain_params, 4, 3));
  EXPECT_EQ(optimizer_param_state(fused, fused_params[2]).at("step").item<int64_t>(), 7);
}

// A channels-last weight with a gradient and moments in the default layout (a gradient written into
// a flat buffer's view, moments loaded from a checkpoint): the kernel's walk of memory in order would
// pair the wrong elements; the step is LibTorch's all the same.
TEST(FusedAdam, TensorsOfDifferentLayoutsStepAsLibtorchs) {
  REQUIRE_FUSED();
  torch::manual_seed(5);
  const at::Tensor start = torch::randn({4, 3, 5, 5}), g = torch::randn({4, 3, 5, 5});
  at::Tensor plain_w = start.clone().requires_grad_();
  at::Tensor fused_w = start.clone().contiguous(at::MemoryFormat::ChannelsLast).requires_grad_();
  const auto options = torch::optim::AdamWOptions(0.1).weight_decay(0.1);
  torch::optim::AdamW plain({plain_w}, options);
  detail::FusedAdamW fused({fused_w}, options);
  for (int step = 0; step < 3; ++step) {
    plain_w.mutable_grad() = g.clone() * (step + 1);
    fused_w.mutable_grad() = g.clone() * (step + 1);  // contiguous: not the weight's layout
    plain.step();
    fused.step();
  }
  EXPECT_TRUE(fused_w.is_contiguous(at::MemoryFormat::ChannelsLast)) << "the weight keeps its layout";
  EXPECT_TRUE(torch::allclose(fused_w, plain_w, 1e-5, 1e-6)) << (fused_w - plain_w).abs().max();
  EXPECT_TRUE(torch::allclose(optimizer_param_state(fused, fused_w).at("exp_avg_sq"),
                              optimizer_param_state(plain, plain_w).at("exp_avg_sq"), 1e-5, 1e-9));
}

// A gradient the kernels do not take goes to LibTorch's step, which says what it does not support.
TEST(FusedAdam, ASparseGradientIsLeftToLibtorchsStep) {
  REQUIRE_FUSED();
  torch::nn::Embedding embedding(torch::nn::EmbeddingOptions(6, 3).sparse(true));
  detail::FusedAdam fused(embedding->parameters(), torch::optim::AdamOptions(0.1));
  embedding(torch::tensor({1, 4})).sum().backward();
  ASSERT_TRUE(embedding->weight.grad().is_sparse());
  EXPECT_THAT([&] { fused.step(); },
              ::testing::ThrowsMessage<c10::Error>(::testing::HasSubstr("does not support sparse gradients")));
}

TEST(FusedAdam, MakeOptimizerFusesWhereBuiltAndKeepsItInShards) {
  auto params = parameters();
  auto adamw = make_optimizer(OptimizerOptions().name("adamw").lr(0.01), params);
  EXPECT_EQ(dynamic_cast<detail::FusedAdamW*>(adamw.get()) != nullptr, detail::fused_adam_built());
  EXPECT_EQ(optimizer_kind(*adamw), "adamw");  // checkpoints name it as LibTorch's
  auto plain = make_optimizer(OptimizerOptions().name("adam").lr(0.01).fused(false), params);
  EXPECT_EQ(dynamic_cast<detail::FusedAdam*>(plain.get()), nullptr);
  auto shard = make_optimizer_like(*adamw, {{params[0]}});
  EXPECT_EQ(dynamic_cast<detail::FusedAdamW*>(shard.get()) != nullptr, detail::fused_adam_built());
}

TEST(FusedAdam, FusedTrueWithoutTheKernelsIsRefusedSayingHowToGetThem) {
  if (detail::fused_adam_built()) GTEST_SKIP() << "this LibTorch has the fused kernels";
  auto params = parameters();
  try {
    make_optimizer(OptimizerOptions().name("adamw").fused(true), params);
    FAIL() << "fused: true was accepted";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.key(), "fused");
    EXPECT_THAT(e.what(), ::testing::HasSubstr("needs LibTorch 2.4 or later"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("pip install torch"));
  }
}

}  // namespace
}  // namespace baton
