// Data parallelism under `mpirun -np 2` (label mpi): every rank runs every test in the same order.
// The reference runs (distributed off) train the same model on the whole global batch in one
// process; with data parallelism each rank takes its share and gradients are averaged.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "baton/algorithms/registry.h"
#include "baton/io/file.h"
#include "baton/metrics/metrics.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"
#include "mpi/comm.h"
#include "train/mpi_fixtures.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using testing::max_difference;
using testing::spread_across_ranks;
using testing::weights;

std::shared_ptr<TensorDataset> blobs(int64_t n, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto labels = torch::randint(0, 4, {n}, gen, torch::kLong);
  auto x = torch::eye(4, 8).index_select(0, labels) * 2.0 + torch::randn({n, 8}, gen);
  return std::make_shared<TensorDataset>(x, labels);
}

// 207 examples in batches of 25: 9 batches an epoch, the last one of 7; 2 ranks take 12 and 13
// of a full batch, 3 and 4 of the last: uneven shares.
TrainerOptions options(Distributed distributed, const std::string& steps) {
  torch::manual_seed(11);
  auto model = make_model("mlp", ModelOptions().input_shape({8}).num_classes(4).hidden({32, 16}));
  return TrainerOptions()
      .model(model)
      .train_dataloader(std::make_shared<DataLoader>(blobs(207, 1), DataLoaderOptions().batch_size(25).seed(3)))
      .eval_dataloader("eval",
                       std::make_shared<DataLoader>(blobs(101, 2), DataLoaderOptions().batch_size(10).shuffle(false)))
      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.2).momentum(0.9), model->parameters())})
      .max_duration(steps)
      .eval_interval("0ba")
      .distributed(distributed)
      .ddp_bucket_mb(0.002)  // a few buckets for this small model, so that several reduce during backward
      .num_threads(1)
      .progress_bar(false)
      .console_log_interval("0ba");
}

std::vector<at::Tensor> reference(const std::string& steps) {
  Trainer t(options(Distributed::kOff, steps));
  EXPECT_EQ(t.world_size(), 1);
  t.fit();
  return weights(t);
}

TEST(DataParallel, TwoRanksEqualOneProcessOnTheSameGlobalBatches) {
  ASSERT_EQ(mpi::Comm::world().size(), 2) << "run under mpirun -np 2";
  const auto expected = reference("20ba");
  Trainer ddp(options(Distributed::kAuto, "20ba"));  // mpirun's environment turns it on
  EXPECT_EQ(ddp.world_size(), 2);
  EXPECT_EQ(ddp.rank(), mpi::Comm::world().rank());
  ddp.fit();
  const auto got = weights(ddp);
  EXPECT_LT(max_difference(got, expected), 1e-5);
  EXPECT_GT(max_difference(got, weights(*std::make_unique<Trainer>(options(Distributed::kOff, "1ba")))), 1e-3)
      << "the weights moved";
  EXPECT_EQ(spread_across_ranks(got), 0.0) << "every rank ends with the same weights";
  EXPECT_EQ(ddp.state().timestamp.batch(), 20);
  EXPECT_EQ(ddp.state().timestamp.sample(), 2 * 207 + 2 * 25) << "samples count global batches";
  EXPECT_EQ(ddp.state().timestamp.epoch(), 2);
  EXPECT_EQ(ddp.state().batch_samples, 25) << "the global batch, not this rank's share";
  EXPECT_LT(ddp.state().batch.size(), 25);
  // Every rank's memory, on every rank: the same whole model, gradients and state on each.
  const auto& ranks = ddp.summary().memory_per_rank;
  ASSERT_EQ(ranks.size(), 2U);
  EXPECT_EQ(ranks[static_cast<std::size_t>(ddp.rank())].params_bytes, ddp.summary().memory.params_bytes);
  EXPECT_EQ(ranks[0].params_bytes, ranks[1].params_bytes);
  EXPECT_EQ(ranks[0].optimizer_bytes, ranks[1].optimizer_bytes);
  EXPECT_GT(ranks[1].peak_bytes, 0);
}

// An algorithm that does nothing but says some parameters may get no gradient.
class MayLeaveParametersUnused : public Algorithm {
 public:
  bool match(Event, const State&) override { return false; }
  std::optional<int> apply(Event, State&, Logger&) override { return std::nullopt; }
  bool find_unused_parameters() const override { return true; }
};

TEST(DataParallel, WithoutOverlapAndWithFindUnusedParametersTheSame) {
  const auto expected = reference("12ba");
  {
    auto o = options(Distributed::kOn, "12ba");
    o.ddp_overlap(false);
    Trainer ddp(o);
    ddp.fit();
    EXPECT_LT(max_difference(weights(ddp), expected), 1e-5) << "reduced after backward";
  }
  {
    auto o = options(Distributed::kOn, "12ba");
    o.algorithms({std::make_shared<MayLeaveParametersUnused>()});
    Trainer ddp(o);
    ddp.fit();
    EXPECT_LT(max_difference(weights(ddp), expected), 1e-5) << "find_unused_parameters";
  }
}

TEST(DataParallel, SamAveragesTheGradientOfItsOwnBackwardToo) {
  auto with_sam = [](Distributed d) {
    auto o = options(d, "12ba");
    o.algorithms({make_algorithm("sam", {{"rho", 0.05}})});
    return o;
  };
  Trainer single(with_sam(Distributed::kOff));
  single.fit();
  Trainer ddp(with_sam(Distributed::kOn));
  ddp.fit();
  EXPECT_LT(max_difference(weights(ddp), weights(single)), 1e-5);
  EXPECT_EQ(spread_across_ranks(weights(ddp)), 0.0);
}

TEST(DataParallel, EvaluationMetricsCoverTheWholeEvaluationSet) {
  Trainer ddp(options(Distributed::kOn, "5ba"));
  ddp.fit();
  const auto metrics = ddp.eval();
  // The same weights on every example of the eval set, in this process alone.
  auto data = blobs(101, 2);
  torch::NoGradGuard no_grad;
  auto* model = dynamic_cast<Model*>(ddp.state().model.get());
  ASSERT_NE(model, nullptr);
  model->eval();
  auto out = model->eval_forward(Batch{data->inputs(), data->targets()});
  auto acc = make_metric("accuracy");
  acc->update(out.to(torch::kFloat), data->targets());
  auto loss = make_metric("loss");
  loss->update(out.to(torch::kFloat), data->targets());
  EXPECT_DOUBLE_EQ(metrics.at("eval").at("accuracy"), acc->compute());
  EXPECT_NEAR(metrics.at("eval").at("loss"), loss->compute(), 1e-6);
}

fs::path shared_dir(const std::string& name) { return testing::shared_dir("baton_ddp", name); }

fs::path checkpoint_at(const fs::path& folder, int batch) {
  for (const auto& entry : fs::directory_iterator(folder)) {
    const auto name = entry.path().filename().string();
    if (name.find("-ba" + std::to_string(batch) + ".ckpt") != std::string::npos) return entry.path();
  }
  return {};
}

TEST(DataParallel, ACheckpointOfTwoRanksResumesInOneProcessAndViceVersa) {
  auto& comm = mpi::Comm::world();
  const auto expected = reference("20ba");

  // 2 ranks save at batch 10 (rank 0 writes); one process goes on to batch 20.
  const auto from_ddp = shared_dir("from_ddp");
  {
    auto o = options(Distributed::kOn, "10ba");
    o.save_folder(from_ddp.string()).save_interval("10ba");
    Trainer ddp(o);
    ddp.fit();
  }
  comm.barrier();
  if (comm.rank() == 0) {
    EXPECT_EQ(fs::exists(from_ddp / "latest"), true) << "rank 0 writes the checkpoints";
  }
  const auto ckpt = checkpoint_at(from_ddp, 10);
  ASSERT_FALSE(ckpt.empty()) << "no checkpoint at batch 10 in " << from_ddp;
  {
    auto o = options(Distributed::kOff, "20ba");
    o.load_path(ckpt.string());
    Trainer single(o);
    EXPECT_EQ(single.state().timestamp.batch(), 10);
    single.fit();
    EXPECT_LT(max_difference(weights(single), expected), 1e-5) << "2 ranks -> 1 process";
  }

  // One process saves at batch 10 (rank 0 does it, alone); 2 ranks go on to batch 20.
  const auto from_single = shared_dir("from_single");
  if (comm.rank() == 0) {
    auto o = options(Distributed::kOff, "10ba");
    o.save_folder(from_single.string()).save_interval("10ba");
    Trainer single(o);
    single.fit();
  }
  comm.barrier();
  const auto ckpt2 = checkpoint_at(from_single, 10);
  ASSERT_FALSE(ckpt2.empty());
  {
    auto o = options(Distributed::kOn, "20ba");
    o.load_path(ckpt2.string());
    Trainer ddp(o);
    ddp.fit();
    EXPECT_LT(max_difference(weights(ddp), expected), 1e-5) << "1 process -> 2 ranks";
  }
  comm.barrier();
  if (comm.rank() == 0) {
    baton::remove_tree(from_ddp);
    baton::remove_tree(from_single);
  }
}

TEST(DataParallel, AStopOnOneRankStopsEveryRankAfterTheSameBatch) {
  class StopAt : public Callback {
   public:
    void batch_end(State& state, Logger&) override {
      if (state.timestamp.batch() == 7 && mpi::Comm::world().rank() == 1) state.stop_training();
    }
  };
  auto o = options(Distributed::kOn, "20ba");
  o.callbacks({std::make_shared<StopAt>()});
  Trainer ddp(o);
  ddp.fit();
  EXPECT_EQ(ddp.state().timestamp.batch(), 7) << "on rank " << ddp.rank();
  EXPECT_TRUE(ddp.summary().stopped_early);
}

}  // namespace
}  // namespace baton
