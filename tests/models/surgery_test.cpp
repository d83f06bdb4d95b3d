// Model surgery's mechanism (src/models/surgery.cpp): slots refilled in place so that forward()
// calls the new module, every slot offered once, and an optimizer kept in step with the new
// parameters. The algorithms that use it are tested in tests/algorithms/surgery_test.cpp.
#include "baton/models/surgery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;

// Scales its input: a module whose effect a test can see.
struct ScaleImpl : torch::nn::Module {
  explicit ScaleImpl(double f) : factor(f) {}
  at::Tensor forward(const at::Tensor& x) { return x * factor; }
  double factor;
};
TORCH_MODULE(Scale);

Stack two_linears() {
  torch::manual_seed(0);
  Stack stack;
  stack->push_back(torch::nn::Linear(4, 3));
  stack->push_back(torch::nn::Linear(3, 2));
  return stack;
}

TEST(ModelSurgery, AReplacedSlotIsWhatForwardCallsAndTakesTheTrainingMode) {
  Stack stack = two_linears();
  EXPECT_EQ(stack->slot_names(), (std::vector<std::string>{"0", "1"}));
  const at::Tensor x = torch::randn({5, 4});
  const at::Tensor before = stack->forward(x);
  stack->eval();
  Stack zeroing;
  zeroing->push_back(torch::nn::Linear(3, 2));
  zeroing->push_back(Scale(0.0));
  stack->replace("1", torch::nn::AnyModule(zeroing));
  EXPECT_FALSE(stack->slot("1").ptr()->is_training());
  EXPECT_TRUE(torch::equal(stack->forward(x), torch::zeros_like(before)));
  EXPECT_EQ(stack->named_parameters().contains("1.0.weight"), true);  // the registry changed too
  EXPECT_EQ(error_of([&] { stack->slot("2"); }), "Stack has no slot '2'");
}

TEST(ModelSurgery, EverySlotIsOfferedOnceWithItsPathAndNewModulesAreNotOfferedAgain) {
  Stack outer;
  outer->push_back(two_linears());
  outer->push_back(torch::nn::Linear(2, 2));
  std::vector<std::string> offered;
  const int replaced = replace_modules(
      *outer, [&](const std::string& path, torch::nn::Module& child) -> std::optional<torch::nn::AnyModule> {
        offered.push_back(path);
        if (dynamic_cast<torch::nn::LinearImpl*>(&child) == nullptr) return std::nullopt;
        return torch::nn::AnyModule(Scale(2.0));
      });
  EXPECT_EQ(offered, (std::vector<std::string>{"0", "1", "0.0", "0.1"}));
  EXPECT_EQ(replaced, 3);
  EXPECT_TRUE(outer->parameters().empty());
  EXPECT_TRUE(torch::equal(outer->forward(torch::ones({1, 4})), torch::full({1, 4}, 8.0)));
}

TEST(ModelSurgery, AnOptimizerDropsTheOldParametersAndTheirStateAndTakesTheNewOnes) {
  Stack stack = two_linears();
  torch::optim::Adam adam(stack->parameters(), torch::optim::AdamOptions(0.1));
  stack->forward(torch::randn({2, 4})).sum().backward();
  adam.step();
  EXPECT_EQ(adam.state().size(), 4U);
  stack->replace("1", torch::nn::AnyModule(torch::nn::Linear(3, 2)));
  sync_optimizer_params(adam, *stack);
  const auto& params = adam.param_groups()[0].params();
  ASSERT_EQ(params.size(), 4U);
  const auto in_model = stack->parameters();
  for (const auto& p : params) {
    EXPECT_TRUE(std::any_of(in_model.begin(), in_model.end(), [&](const at::Tensor& q) { return q.is_same(p); }));
  }
  EXPECT_EQ(adam.state().size(), 2U);  // the first linear's; the new one's start afresh
  adam.zero_grad();
  stack->forward(torch::randn({2, 4})).sum().backward();
  adam.step();
  EXPECT_EQ(adam.state().size(), 4U);
}

}  // namespace
}  // namespace baton
