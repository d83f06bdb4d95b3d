// The optimizer's state sharded over ranks (src/train/sharded_optimizer.cpp), under `mpirun -np 3`
// (label mpi; 3 ranks: a length that does not divide, padded): each kind of optimizer, two parameter
// groups and a learning rate changed between steps give the weights of the unsharded optimizer,
// bitwise, and each rank holds a third of the state; units are gathered in the compute precision.
#include "train/sharded_optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/models/checkpointing.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "mpi/comm.h"

namespace baton {
namespace {

struct Training {
  std::shared_ptr<Model> model;
  std::shared_ptr<torch::optim::Optimizer> optimizer;
};

// An mlp whose biases are a second parameter group without weight decay, as recipes' often are.
Training make_run(const std::string& optimizer) {
  torch::manual_seed(0);
  Training run;
  run.model = make_model("mlp", ModelOptions().input_shape({7}).num_classes(3).hidden({13}));
  std::vector<at::Tensor> weights, biases;
  for (const auto& p : run.model->named_parameters()) {
    (p.key().find("bias") != std::string::npos ? biases : weights).push_back(p.value());
  }
  OptimizerOptions options = OptimizerOptions().name(optimizer).lr(0.05).weight_decay(0.01).momentum(0.9);
  if (optimizer == "sgd") options.nesterov(true);
  run.optimizer = make_optimizer(options, weights);
  auto bias_options = run.optimizer->param_groups()[0].options().clone();
  run.optimizer->add_param_group(torch::optim::OptimizerParamGroup(biases, std::move(bias_options)));
  return run;
}

// A step's gradients: the same on every rank (as after data parallelism's average).
void backward(Training& run, int step) {
  run.optimizer->zero_grad();
  torch::manual_seed(100 + step);
  const Batch batch{torch::randn({16, 7}), torch::randint(0, 3, {16})};
  run.model->loss(run.model->forward(batch), batch).backward();
}

TEST(ShardedOptimizer, EveryKindStepsToTheUnshardedWeightsBitwise) {
  mpi::Comm& comm = mpi::Comm::world();
  ASSERT_EQ(comm.size(), 3) << "run under mpirun -np 3";
  for (const auto& [name, offload] : std::vector<std::pair<std::string, bool>>{
           {"sgd", false}, {"decoupled_sgdw", false}, {"adam", false}, {"adamw", false}, {"adamw", true}}) {
    SCOPED_TRACE(name + (offload ? " offloaded" : ""));  // offloaded: the shards are tensors of their own
    Training whole = make_run(name), sharded = make_run(name);
    detail::ShardedOptimizer shards(sharded.optimizer, comm, nullptr, {}, offload);
    for (int step = 0; step < 8; ++step) {
      if (step == 4) {  // a scheduler's new rate, in the original's groups
        for (auto* run : {&whole, &sharded}) {
          for (auto& group : run->optimizer->param_groups()) group.options().set_lr(0.02);
        }
      }
      backward(whole, step);
      backward(sharded, step);
      whole.optimizer->step();
      shards.step();
    }
    const auto a = whole.model->parameters(), b = sharded.model->parameters();
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
    EXPECT_EQ(optimizer_state_bytes(*sharded.optimizer), 0);  // the original holds none
    const int64_t whole_bytes = optimizer_state_bytes(*whole.optimizer);
    int64_t held = 0;
    for (const int64_t n : shards.shard_sizes()) held += n * 4 * (name.rfind("adam", 0) == 0 ? 2 : 1);
    EXPECT_EQ(shards.state_bytes(), held);
    EXPECT_LE(shards.state_bytes() * 3, whole_bytes + 3 * 2 * 4 * 2);  // a third, but for the padding
  }
}

// Full sharding's units are gathered for their passes in the run's precision: under bfloat16 half the
// bytes, the parameters holding the shards' values rounded (what autocast casts them to anyway);
// gathered after the fit, the exact values again.
TEST(ShardedOptimizer, UnitsAreGatheredInTheComputePrecision) {
  mpi::Comm& comm = mpi::Comm::world();
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    torch::manual_seed(0);
    auto model = make_model("mlp", ModelOptions().input_shape({7}).num_classes(3).hidden({13}));
    const std::vector<at::Tensor> params = model->parameters();
    std::vector<at::Tensor> exact;
    for (const auto& p : params) exact.push_back(p.detach().clone());
    const std::vector<at::Tensor> unit(params.begin(), params.begin() + 2);  // the hidden layer
    const auto optimizer = make_optimizer(OptimizerOptions().name("adamw").lr(0.05), params);
    detail::ShardedOptimizer shards(optimizer, comm, nullptr, {unit}, /*offload=*/false, dtype);
    shards.shard_parameters();
    ASSERT_TRUE(shards.parameters_sharded());
    const auto hooks = shards.unit_hooks(0);
    hooks->before_forward();
    const int64_t length = unit[0].numel() + unit[1].numel();
    const int64_t padded = (length + comm.size() - 1) / comm.size() * comm.size();
    EXPECT_EQ(shards.gathered_bytes(), padded * static_cast<int64_t>(c10::elementSize(dtype)));
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(params[i].scalar_type(), at::kFloat);
      EXPECT_TRUE(torch::equal(params[i], exact[i].to(dtype).to(at::kFloat))) << "parameter " << i;
    }
    EXPECT_EQ(torch::equal(params[0], exact[0]), dtype == at::kFloat);
    hooks->after_forward();
    shards.gather_parameters();
    for (std::size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i], exact[i])) << "parameter " << i;
  }
}

TEST(ShardedOptimizer, ParametersThatAreNotFloat32AreRefused) {
  at::Tensor w = torch::zeros({4}, torch::kDouble).requires_grad_(true);
  const auto optimizer = make_optimizer(OptimizerOptions().name("sgd").lr(0.1), {w});
  EXPECT_THAT([&] { detail::ShardedOptimizer(optimizer, mpi::Comm::world()); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr(
                  "sharding: the optimizer's parameters must be float32 on one device, got Double")));
}

}  // namespace
}  // namespace baton
