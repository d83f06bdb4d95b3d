// Activation checkpointing (src/models/checkpointing.cpp): the units' activations recomputed in
// backward give the gradients, outputs and BatchNorm statistics of the model without it, dropout
// included; parameter names stay; kinds a model lacks are named.
#include "baton/models/checkpointing.h"

#include <set>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/core/precision.h"
#include "baton/models/surgery.h"
#include "baton/models/zoo.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

std::shared_ptr<Model> gpt(double dropout) {
  torch::manual_seed(0);
  return make_model("gpt",
                    ModelOptions().input_shape({16}).num_classes(32).layers(3).width(32).heads(4).dropout(dropout));
}

std::shared_ptr<Model> resnet() {
  torch::manual_seed(0);
  return make_model("resnet20", ModelOptions().input_shape({3, 16, 16}).num_classes(4));
}

// How many nodes of `loss`'s backward graph recompute a unit.
int recomputing_nodes(const at::Tensor& loss) {
  int found = 0;
  std::set<const torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> todo = {loss.grad_fn().get()};
  while (!todo.empty()) {
    torch::autograd::Node* node = todo.back();
    todo.pop_back();
    if (node == nullptr || !seen.insert(node).second) continue;
    found += node->name().find("UnitCall") != std::string::npos ? 1 : 0;
    for (const auto& edge : node->next_edges()) todo.push_back(edge.function.get());
  }
  return found;
}

// One training step's loss, every parameter's gradient and every buffer, after seeding the generator.
struct Step {
  at::Tensor loss;
  std::vector<at::Tensor> grads, buffers;
  int recomputing = 0;  // nodes of the backward graph that recompute a unit
};

Step step(Model& model, const Batch& batch) {
  model.train();
  model.zero_grad();
  torch::manual_seed(7);  // dropout's masks
  Step out;
  out.loss = model.loss(model.forward(batch), batch);
  out.recomputing = recomputing_nodes(out.loss);
  out.loss.backward();
  for (const auto& p : model.parameters()) out.grads.push_back(p.grad().clone());
  for (const auto& b : model.buffers()) out.buffers.push_back(b.clone());
  return out;
}

void expect_same(const Step& a, const Step& b) {
  EXPECT_NEAR(a.loss.item<double>(), b.loss.item<double>(), 1e-6);
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (std::size_t i = 0; i < a.grads.size(); ++i) {
    EXPECT_LT((a.grads[i] - b.grads[i]).abs().max().item<double>(), 1e-6) << "gradient " << i;
  }
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (std::size_t i = 0; i < a.buffers.size(); ++i) EXPECT_TRUE(torch::equal(a.buffers[i], b.buffers[i])) << i;
}

TEST(ActivationCheckpointing, AGptsGradientsWithDropoutAreTheOnesWithoutIt) {
  const Batch batch{torch::randint(0, 32, {4, 16}), torch::randint(0, 32, {4, 16})};
  const auto plain = gpt(0.1);
  const auto recomputed = gpt(0.1);
  std::vector<std::string> names;
  for (const auto& p : recomputed->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(repeated_unit_kinds(*recomputed), (std::vector<std::string>{"Block"}));
  EXPECT_EQ(checkpoint_activations(*recomputed, {"auto"}), 3);
  EXPECT_EQ(checkpoint_activations(*recomputed, {"Block"}), 0);  // once is enough
  std::vector<std::string> after;
  for (const auto& p : recomputed->named_parameters()) after.push_back(p.key());
  EXPECT_EQ(after, names);
  int blocks = 0;  // the model is the same modules
  for (const auto& m : recomputed->modules()) blocks += module_kind(*m) == "Block" ? 1 : 0;
  EXPECT_EQ(blocks, 3);
  const Step without = step(*plain, batch), with = step(*recomputed, batch);
  EXPECT_EQ(without.recomputing, 0);
  EXPECT_EQ(with.recomputing, 3);
  expect_same(without, with);
  // Evaluation: no dropout in the units either (their own training flag follows the model's).
  plain->eval();
  recomputed->eval();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::allclose(plain->forward(batch), recomputed->forward(batch), 1e-6, 1e-6));
}

// Under autocast the recomputation runs under the forward's autocast too: its bfloat16 products give
// the gradients of the plain step (in fp32 they would differ by bfloat16's rounding).
TEST(ActivationCheckpointing, RecomputesUnderTheForwardsAutocast) {
  const Batch batch{torch::randint(0, 32, {4, 16}), torch::randint(0, 32, {4, 16})};
  const auto plain = gpt(0.1), recomputed = gpt(0.1);
  checkpoint_activations(*recomputed, {"auto"});
  const auto autocast_step = [&](Model& model) {
    model.train();
    model.zero_grad();
    torch::manual_seed(7);
    Step out;
    {
      const AutocastGuard autocast(Precision::kAmpBf16, c10::kCPU);
      out.loss = model.loss(model.forward(batch), batch);
    }
    out.loss.backward();
    for (const auto& p : model.parameters()) out.grads.push_back(p.grad().clone());
    for (const auto& b : model.buffers()) out.buffers.push_back(b.clone());
    return out;
  };
  const Step without = autocast_step(*plain), with = autocast_step(*recomputed);
  expect_same(without, with);
  const Step fp32 = step(*plain, batch);  // autocast changes them indeed
  EXPECT_GT((fp32.grads[0] - with.grads[0]).abs().max().item<double>(), 1e-4);
  EXPECT_FALSE(autocast_enabled(c10::kCPU));  // the recomputation's autocast ended with it
}

TEST(ActivationCheckpointing, BatchNormStatisticsMoveOnceAStep) {
  const Batch batch{torch::randn({8, 3, 16, 16}), torch::randint(0, 4, {8})};
  const auto plain = resnet();
  const auto recomputed = resnet();
  EXPECT_EQ(repeated_unit_kinds(*recomputed), (std::vector<std::string>{"BasicBlock"}));
  EXPECT_EQ(checkpoint_activations(*recomputed, {"BasicBlock"}), 9);
  expect_same(step(*plain, batch), step(*recomputed, batch));
}

TEST(ActivationCheckpointing, KindsTheModelLacksAreNamed) {
  const auto model = gpt(0.0);
  EXPECT_EQ(error_of([&] { checkpoint_activations(*model, {"Bottleneck"}); }),
            "activation_checkpointing: the model has no Bottleneck block (its blocks: Block)");
  torch::manual_seed(0);
  const auto mlp = make_model("mlp", ModelOptions().input_shape({8}).num_classes(2));
  EXPECT_THAT(error_of([&] { checkpoint_activations(*mlp, {"auto"}); }),
              HasSubstr("activation_checkpointing: auto: the model has no repeated blocks"));
  EXPECT_EQ(module_kind(*torch::nn::Linear(2, 2)), "Linear");
  EXPECT_EQ(module_kind(*model), "Classifier");
}

// Unit hooks (what full sharding gathers and frees by) run around each unit's forward, in the
// model's order, and around its backward, in reverse; with and without recomputation the gradients
// are the model's own.
class RecordingHooks : public UnitHooks {
 public:
  RecordingHooks(std::vector<std::string>& log, int unit) : log_(log), unit_(std::to_string(unit)) {}
  void before_forward() override { log_.push_back("gather " + unit_); }
  void after_forward() override { log_.push_back("free " + unit_); }
  void before_backward() override { log_.push_back("gather " + unit_ + " for backward"); }
  void after_backward() override { log_.push_back("reduce " + unit_); }

 private:
  std::vector<std::string>& log_;
  std::string unit_;
};

TEST(UnitHooks, RunAroundEachUnitsPassesInOrder) {
  const Batch batch{torch::randint(0, 32, {4, 16}), torch::randint(0, 32, {4, 16})};
  const Step without = step(*gpt(0.1), batch);
  for (const bool recompute : {false, true}) {
    SCOPED_TRACE(recompute ? "recomputed" : "kept");
    const auto hooked = gpt(0.1);
    std::vector<std::string> log;
    int unit = 0;
    EXPECT_EQ(for_each_unit(*hooked, {"auto"}, "shard_unit",
                            [&](Replaceable& owner, const std::string& slot) {
                              owner.set_unit_hooks(slot, std::make_shared<RecordingHooks>(log, unit++));
                            }),
              3);
    if (recompute) checkpoint_activations(*hooked, {"Block"});
    const Step with = step(*hooked, batch);
    expect_same(without, with);
    EXPECT_EQ(log, (std::vector<std::string>{"gather 0", "free 0", "gather 1", "free 1", "gather 2", "free 2",
                                             "gather 2 for backward", "reduce 2", "gather 1 for backward", "reduce 1",
                                             "gather 0 for backward", "reduce 0"}));
  }
  EXPECT_THAT(
      error_of([] { for_each_unit(*gpt(0.0), {"Bottleneck"}, "shard_unit", [](Replaceable&, const std::string&) {}); }),
      HasSubstr("shard_unit: the model has no Bottleneck block (its blocks: Block)"));
}

}  // namespace
}  // namespace baton
