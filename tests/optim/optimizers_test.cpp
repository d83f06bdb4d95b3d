#include "baton/optim/optimizers.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace baton {
namespace {

// One step of the optimizer on loss = sum(w * g) from w = 1: the gradient is g.
at::Tensor one_step(const OptimizerOptions& spec, const at::Tensor& g) {
  auto w = torch::ones({3}, torch::requires_grad());
  auto opt = make_optimizer(spec, {w});
  opt->zero_grad();
  (w * g).sum().backward();
  opt->step();
  return w.detach();
}

TEST(Optimizers, SgdTakesAPlainStep) {
  const auto g = torch::tensor({1.0f, -2.0f, 0.5f});
  EXPECT_TRUE(torch::allclose(one_step(OptimizerOptions().name("sgd").lr(0.1), g), 1 - 0.1 * g));
}

TEST(Optimizers, SgdWeightDecayIsCoupled) {
  const auto g = torch::tensor({1.0f, -2.0f, 0.5f});
  EXPECT_TRUE(
      torch::allclose(one_step(OptimizerOptions().name("sgd").lr(0.1).weight_decay(0.5), g), 1 - 0.1 * (g + 0.5)));
}

TEST(Optimizers, DecoupledSgdwDecaysTheWeightsApart) {
  const auto g = torch::tensor({1.0f, -2.0f, 0.5f});
  // decay factor 1 - wd * lr / initial_lr = 1 - 0.5, then the plain step.
  EXPECT_TRUE(
      torch::allclose(one_step(OptimizerOptions().name("decoupled_sgdw").lr(0.1).weight_decay(0.5), g), 0.5 - 0.1 * g));
}

TEST(Optimizers, AdamFirstStepIsLrTimesSign) {
  const auto g = torch::tensor({1.0f, -2.0f, 0.5f});
  EXPECT_TRUE(torch::allclose(one_step(OptimizerOptions().name("adam").lr(0.01), g), 1 - 0.01 * g.sign(), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(one_step(OptimizerOptions().name("adamw").lr(0.01).weight_decay(0.1), g),
                              (1 - 0.01 * 0.1) - 0.01 * g.sign(), 1e-5, 1e-6));
}

TEST(Optimizers, RefusesUnknownNamesAndBadValues) {
  auto w = torch::ones({1}, torch::requires_grad());
  EXPECT_THAT([&] { make_optimizer(OptimizerOptions().name("lion"), {w}); },
              ::testing::ThrowsMessage<std::invalid_argument>(
                  ::testing::HasSubstr("unknown optimizer 'lion' (known: sgd, adam")));
  EXPECT_THROW(make_optimizer(OptimizerOptions().name("sgd").lr(-1), {w}), std::invalid_argument);
  EXPECT_THROW(make_optimizer(OptimizerOptions().name("sgd").nesterov(true), {w}), std::invalid_argument);
}

TEST(Optimizers, TheirStateIsCountedInBytesOnceItExists) {
  at::Tensor w = torch::ones({10, 3}).requires_grad_(true);
  at::Tensor b = torch::ones({3}, torch::kDouble).requires_grad_(true);
  const int64_t params = 30 * 4 + 3 * 8;
  for (const auto& [name, factor] :
       std::vector<std::pair<std::string, int>>{{"sgd", 0}, {"decoupled_sgdw", 1}, {"adam", 2}, {"adamw", 2}}) {
    SCOPED_TRACE(name);
    auto options = OptimizerOptions().name(name).lr(0.1);
    if (name == "decoupled_sgdw") options.momentum(0.9);
    const auto optimizer = make_optimizer(options, {w, b});
    EXPECT_EQ(optimizer_state_bytes(*optimizer), 0);  // no state before the first step
    optimizer->zero_grad();
    ((w * w).sum() + (b * b).sum().to(torch::kFloat)).backward();
    optimizer->step();
    EXPECT_EQ(optimizer_state_bytes(*optimizer), factor * params);
  }
}

TEST(Optimizers, OneLikeAnotherTakesItsKindAndEachGroupsOptions) {
  at::Tensor w = torch::ones({3}).requires_grad_(true), shard = torch::ones({2}).requires_grad_(true);
  const auto adamw = make_optimizer(OptimizerOptions().name("adamw").lr(0.1).weight_decay(0.3), {w});
  const auto like = make_optimizer_like(*adamw, {{shard}});
  EXPECT_EQ(optimizer_kind(*like), "adamw");
  const auto& options = static_cast<const torch::optim::AdamWOptions&>(like->param_groups()[0].options());
  EXPECT_DOUBLE_EQ(options.lr(), 0.1);
  EXPECT_DOUBLE_EQ(options.weight_decay(), 0.3);
  EXPECT_EQ(like->param_groups()[0].params()[0].unsafeGetTensorImpl(), shard.unsafeGetTensorImpl());
  const auto sgdw = make_optimizer(OptimizerOptions().name("decoupled_sgdw").lr(0.1).weight_decay(0.5), {w});
  EXPECT_EQ(optimizer_kind(*make_optimizer_like(*sgdw, {{shard}})), "decoupled_sgdw");
  EXPECT_THAT(
      [&] {
        make_optimizer_like(*adamw, {{shard}, {w}});
      },
      ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("2 groups for an optimizer of 1")));
  torch::optim::RMSprop rmsprop({w}, torch::optim::RMSpropOptions(0.1));
  EXPECT_THAT([&] { make_optimizer_like(rmsprop, {{shard}}); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("is none of sgd, adam")));
}

// A parameter's state as named tensors, and set back: an optimizer given another's state (moved
// to a parameter of the same shape) steps as that one does.
TEST(Optimizers, AParametersStateIsReadAndSetByName) {
  for (const std::string name : {"sgd", "decoupled_sgdw", "adam", "adamw"}) {
    SCOPED_TRACE(name);
    auto options = OptimizerOptions().name(name).lr(0.1).momentum(0.9);
    at::Tensor a = torch::ones({4}).requires_grad_(true), b = torch::ones({4}).requires_grad_(true);
    const auto first = make_optimizer(options, {a}), second = make_optimizer(options, {b});
    EXPECT_TRUE(optimizer_param_state(*first, a).empty()) << "none before the first step";
    for (int step = 0; step < 2; ++step) {
      first->zero_grad();
      (a * torch::arange(4.0)).sum().backward();
      first->step();
    }
    const auto state = optimizer_param_state(*first, a);
    const bool adam = name.rfind("adam", 0) == 0;
    EXPECT_EQ(state.size(), adam ? 3U : 1U);
    if (adam) {
      EXPECT_EQ(state.at("step").item<int64_t>(), 2);
    }
    std::map<std::string, at::Tensor> copied;
    for (const auto& [key, value] : state) copied[key] = value.clone();
    set_optimizer_param_state(*second, b, copied);
    {
      torch::NoGradGuard no_grad;
      b.copy_(a);
    }
    for (auto* run : {&first, &second}) {
      at::Tensor& p = run == &first ? a : b;
      (*run)->zero_grad();
      (p * torch::arange(4.0)).sum().backward();
      (*run)->step();
    }
    EXPECT_TRUE(torch::equal(a, b));
    set_optimizer_param_state(*second, b, {});
    EXPECT_TRUE(optimizer_param_state(*second, b).empty());
  }
  torch::optim::RMSprop rmsprop({torch::ones({1})}, torch::optim::RMSpropOptions(0.1));
  EXPECT_THAT([&] { optimizer_param_state(rmsprop, torch::ones({1})); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("is none of sgd, adam")));
}

}  // namespace
}  // namespace baton
