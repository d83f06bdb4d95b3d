// Sharded data parallelism in the Trainer (src/train/trainer_sharding.cpp) under mpirun, at any
// number of ranks (CTest runs it at 2 and 4): the zoo's gpt (4 layers, width 256) trained 50 AdamW
// steps with sharding: optimizer or gradients, with gradient clipping and microbatches too, logs the
// losses of a 1-process run on the same global batches and ends at its weights (1e-5); a rank holds
// 1/N of the optimizer's state; a sharded run's checkpoint resumes in one process and on the ranks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>
#include <filesystem>
#include <iostream>
#include <string>

#include "baton/algorithms/weights.h"
#include "baton/io/file.h"
#include "baton/loggers/in_memory_logger.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"
#include "common/test_util.h"
#include "mpi/comm.h"
#include "train/mpi_fixtures.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::max_difference;
using testing::spread_across_ranks;
using testing::weights;

struct RunSetup {
  Sharding sharding = Sharding::kNone;
  bool clip_and_microbatches = false;
  std::string steps = "50ba";
  std::vector<std::string> activation_checkpointing = {};
  int64_t samples = 96;  // 12 batches of 8
  Precision precision = Precision::kFp32;
};

// 8 sequences of 32 tokens a global batch: each rank takes its share of every batch.
TrainerOptions gpt_run(const RunSetup& setup, Distributed distributed, std::shared_ptr<InMemoryLogger> log = nullptr) {
  torch::manual_seed(0);
  auto model =
      make_model("gpt", ModelOptions().input_shape({32}).num_classes(256).layers(4).width(256).heads(4).dropout(0.0));
  auto tokens = at::detail::createCPUGenerator(5);
  auto data = std::make_shared<TensorDataset>(torch::randint(0, 256, {setup.samples, 32}, tokens, torch::kLong),
                                              torch::randint(0, 256, {setup.samples, 32}, tokens, torch::kLong));
  TrainerOptions o;
  o.model(model)
      .train_dataloader(std::make_shared<DataLoader>(data, DataLoaderOptions().batch_size(8).seed(3)))
      .optimizers({make_optimizer(OptimizerOptions().name("adamw").lr(2e-4).weight_decay(0.01), model->parameters())})
      .max_duration(setup.steps)
      .eval_interval("0ba")
      .distributed(distributed)
      .sharding(setup.sharding)
      .activation_checkpointing(setup.activation_checkpointing)
      .precision(setup.precision)
      .num_threads(1)
      .progress_bar(false)
      .console_log_interval("0ba");
  if (setup.clip_and_microbatches) {
    o.algorithms({std::make_shared<GradientClipping>(GradientClippingOptions().clipping_threshold(0.5))});
    o.device_train_microbatch_size(1);
  }
  if (log) o.loggers({log});
  return o;
}

double max_difference(const std::vector<std::pair<int64_t, double>>& a,
                      const std::vector<std::pair<int64_t, double>>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    d = std::max(d, std::abs(a[i].second - b[i].second));
  }
  return d;
}

struct Outcome {
  std::vector<at::Tensor> weights;
  std::vector<std::pair<int64_t, double>> losses;
  MemoryUse memory;
  std::vector<MemoryUse> per_rank;
};

Outcome train(const RunSetup& setup, Distributed distributed) {
  auto log = std::make_shared<InMemoryLogger>();
  Trainer trainer(gpt_run(setup, distributed, log));
  trainer.fit();
  return {weights(trainer), log->series("train/loss"), trainer.summary().memory, trainer.summary().memory_per_rank};
}

// The 1-process run, trained once per setup by every rank (on the same cores, at the same time). It
// takes each global batch in microbatches of one rank's share, so that a rank's forward and backward
// is one of its microbatches (a batch of 8 in one product rounds otherwise than two of 4, and 50
// Adam steps grow that to 1e-5 of the weights, for plain data parallelism as much as sharded): what
// is compared is the reduction over the ranks and the sharded step.
const Outcome& reference(const RunSetup& setup) {
  static std::map<std::pair<bool, std::string>, Outcome> done;
  const auto key = std::make_pair(setup.clip_and_microbatches, setup.steps);
  if (!done.count(key)) {
    TrainerOptions o = gpt_run({Sharding::kNone, setup.clip_and_microbatches, setup.steps}, Distributed::kOff);
    if (!setup.clip_and_microbatches) o.device_train_microbatch_size(8 / mpi::Comm::world().size());
    auto log = std::make_shared<InMemoryLogger>();
    o.loggers({log});
    Trainer trainer(o);
    trainer.fit();
    done[key] = {weights(trainer), log->series("train/loss"), trainer.summary().memory,
                 trainer.summary().memory_per_rank};
  }
  return done[key];
}

void expect_the_same_training(const RunSetup& setup) {
  const Outcome& expected = reference(setup);
  const Outcome got = train(setup, Distributed::kOn);
  if (mpi::Comm::world().rank() == 0) {  // only rank 0 logs
    EXPECT_LT(max_difference(got.losses, expected.losses), 1e-5) << "every step's loss";
    EXPECT_EQ(got.losses.size(), expected.losses.size());
    EXPECT_EQ(got.losses.size(), static_cast<std::size_t>(std::stoi(setup.steps)));
  }
  // The ranks' gradients are summed in another order than one process's microbatches; AdamW's step,
  // divided by the second moment's root, passes such rounding on in proportion to lr: after 50 steps
  // at 2e-4, 1.6e-5 with LibTorch 2.11's fused kernel, under 1e-5 with 1.13's loop.
  EXPECT_LT(max_difference(got.weights, expected.weights), 5e-5) << "the final weights";
  EXPECT_EQ(spread_across_ranks(got.weights), 0.0) << "every rank holds the same weights";
}

TEST(TrainerSharding, NoneTrainsAsOneProcess) { expect_the_same_training({Sharding::kNone}); }

TEST(TrainerSharding, OptimizerShardingTrainsAsOneProcess) { expect_the_same_training({Sharding::kOptimizer}); }

TEST(TrainerSharding, GradientShardingTrainsAsOneProcess) { expect_the_same_training({Sharding::kGradients}); }

TEST(TrainerSharding, FullShardingTrainsAsOneProcess) { expect_the_same_training({Sharding::kFull}); }

// 20 steps: each is 8 microbatches of one example a rank (the slowest setup here).
TEST(TrainerSharding, WithClippingAndMicrobatchesToo) {
  expect_the_same_training({Sharding::kOptimizer, true, "20ba"});
  expect_the_same_training({Sharding::kGradients, true, "20ba"});
  expect_the_same_training({Sharding::kFull, true, "20ba"});
}

TEST(TrainerSharding, FullShardingWithActivationCheckpointing) {
  expect_the_same_training({Sharding::kFull, false, "50ba", {"auto"}});
}

// A short last batch: some ranks have fewer microbatches (or none) and take part in the units'
// collectives of the others' all the same; the run ends as data parallelism's does.
TEST(TrainerSharding, FullShardingWithUnevenShares) {
  const int n = mpi::Comm::world().size();
  for (const bool microbatches : {false, true}) {
    SCOPED_TRACE(microbatches ? "microbatches of 1" : "whole shares");
    const int64_t samples = 8 * 3 + n - 1;  // the 4th batch: n - 1 examples
    const Outcome ddp = train({Sharding::kNone, microbatches, "8ba", {}, samples}, Distributed::kOn);
    const Outcome full = train({Sharding::kFull, microbatches, "8ba", {}, samples}, Distributed::kOn);
    EXPECT_LT(max_difference(full.weights, ddp.weights), 1e-5);
  }
}

// Under amp_bf16 the units are gathered in bfloat16: their matrices are what autocast multiplies
// with anyway, only the layer norms' weights are rounded (data parallelism's are float32; Composer's
// FSDP default does the same), so the losses stay within bfloat16's noise of data parallelism's, and
// the weights differ from its as much as amp_bf16's differ from fp32's (Adam's steps of lr on
// near-zero gradients); with activation checkpointing too (its recomputation under the forward's
// autocast).
// 8 steps: a CPU without AVX512-BF16 emulates bfloat16's products, tens of times slower than fp32's.
TEST(TrainerSharding, FullShardingUnderAmpBf16TrainsAsDataParallelism) {
  RunSetup setup{Sharding::kNone, false, "8ba"};
  const Outcome fp32 = train(setup, Distributed::kOn);
  setup.precision = Precision::kAmpBf16;
  const Outcome ddp = train(setup, Distributed::kOn);
  const double precision_effect = max_difference(ddp.weights, fp32.weights);
  setup.sharding = Sharding::kFull;
  for (const bool recompute : {false, true}) {
    SCOPED_TRACE(recompute ? "activation checkpointing" : "");
    setup.activation_checkpointing = recompute ? std::vector<std::string>{"auto"} : std::vector<std::string>{};
    const Outcome full = train(setup, Distributed::kOn);
    if (mpi::Comm::world().rank() == 0) {
      EXPECT_EQ(full.losses.size(), 8U);
      const double d = max_difference(full.losses, ddp.losses);
      EXPECT_LT(d, 2e-3) << "every step's loss";
      std::cout << "amp_bf16: full sharding's losses within " << d << " of data parallelism's\n";
    }
    const double d = max_difference(full.weights, ddp.weights);
    EXPECT_LT(d, 2 * precision_effect) << "the final weights";
    if (mpi::Comm::world().rank() == 0) std::cout << "weights: " << d << " (fp32's: " << precision_effect << ")\n";
    EXPECT_EQ(spread_across_ranks(full.weights), 0.0) << "every rank holds the same weights";
  }
}

// Each rank holds 1/N of AdamW's two moments (the shards are padded to a multiple of N).
TEST(TrainerSharding, ARankHoldsItsShareOfTheOptimizerState) {
  const int n = mpi::Comm::world().size();
  const RunSetup short_run{Sharding::kOptimizer, false, "2ba"};
  const Outcome whole = reference(short_run);
  for (const Sharding sharding : {Sharding::kOptimizer, Sharding::kGradients, Sharding::kFull}) {
    const Outcome got = train({sharding, false, "2ba"}, Distributed::kOn);
    ASSERT_EQ(got.per_rank.size(), static_cast<std::size_t>(n));
    for (const MemoryUse& rank : got.per_rank) {
      EXPECT_NEAR(static_cast<double>(rank.optimizer_bytes) * n / static_cast<double>(whole.memory.optimizer_bytes),
                  1.0, 0.02);
      const double held =
          static_cast<double>(rank.params_bytes + rank.grads_bytes + rank.optimizer_bytes) /
          static_cast<double>(whole.memory.params_bytes + whole.memory.grads_bytes + whole.memory.optimizer_bytes);
      if (sharding == Sharding::kFull) {  // the units' parameters too (gpt's blocks: most of them)
        EXPECT_LE(held, 1.0 / n + 0.05) << "parameters + gradients + optimizer state, of data parallelism's";
        EXPECT_LT(rank.params_bytes, whole.memory.params_bytes);
      } else {
        EXPECT_EQ(rank.params_bytes, whole.memory.params_bytes) << "whole parameters";
      }
    }
    const double grads = static_cast<double>(got.memory.grads_bytes) / static_cast<double>(whole.memory.grads_bytes);
    if (sharding != Sharding::kOptimizer) {
      EXPECT_NEAR(grads * n, 1.0, 0.02) << "1/N of the gradients";
    } else {
      EXPECT_EQ(grads, 1.0) << "whole gradients";
    }
  }
}

// Evaluations inside a fully sharded fit see the whole units (gathered for them, freed after), and
// give data parallelism's metrics; after fit the model is whole (it can be read and evaluated).
TEST(TrainerSharding, FullShardingEvaluatesInsideTheFit) {
  auto metrics_of = [](Sharding sharding) {
    TrainerOptions o = gpt_run({sharding, false, "6ba"}, Distributed::kOn);
    auto tokens = at::detail::createCPUGenerator(9);
    auto eval = std::make_shared<TensorDataset>(torch::randint(0, 256, {24, 32}, tokens, torch::kLong),
                                                torch::randint(0, 256, {24, 32}, tokens, torch::kLong));
    o.eval_dataloader("eval", std::make_shared<DataLoader>(eval, DataLoaderOptions().batch_size(8).shuffle(false)))
        .eval_interval("3ba");
    auto log = std::make_shared<InMemoryLogger>();
    o.loggers({log});
    Trainer trainer(o);
    trainer.fit();
    const auto after = trainer.eval();  // outside the fit: the whole model
    return std::make_pair(log->series("eval/loss"), after.at("eval").at("loss"));
  };
  const auto ddp = metrics_of(Sharding::kNone), full = metrics_of(Sharding::kFull);
  if (mpi::Comm::world().rank() == 0) {
    ASSERT_EQ(full.first.size(), 3U) << "after batches 3 and 6, and eval() after the fit";
    EXPECT_LT(max_difference(full.first, ddp.first), 1e-5);
  }
  EXPECT_NEAR(full.second, ddp.second, 1e-5);
}

fs::path shared_dir(const std::string& name) { return testing::shared_dir("baton_sharding", name); }

// A checkpoint of the sharded ranks resumes on the ranks, sharded, and in one process: both end where
// the uninterrupted run does. save_format full: every rank gathers, rank 0 writes one file; sharded:
// each rank writes its file of the optimizer's state beside the one rank 0 writes last.
void expect_checkpoints_resume(Sharding sharding, SaveFormat format) {
  auto& comm = mpi::Comm::world();
  const RunSetup full_run{sharding, false, "12ba"};
  const Outcome uninterrupted = train(full_run, Distributed::kOn);
  const fs::path folder = shared_dir("resume");
  {
    TrainerOptions o = gpt_run({sharding, false, "6ba"}, Distributed::kOn);
    o.save_folder(folder.string()).save_interval("3ba").save_format(format).save_num_checkpoints_to_keep(1);
    Trainer first(o);
    first.fit();
  }
  comm.barrier();
  const int n = comm.size();
  if (comm.rank() == 0) {
    EXPECT_TRUE(fs::exists(folder / "ep0-ba6.ckpt")) << "rank 0 writes";
    EXPECT_FALSE(fs::exists(folder / "ep0-ba3.ckpt")) << "one kept";
    const bool sharded = format == SaveFormat::kSharded;
    EXPECT_EQ(fs::exists(folder / ("ep0-ba6.ckpt.rank" + std::to_string(n - 1) + "-of-" + std::to_string(n))), sharded);
    EXPECT_FALSE(fs::exists(folder / ("ep0-ba3.ckpt.rank0-of-" + std::to_string(n)))) << "deleted with its index";
  }
  {
    TrainerOptions o = gpt_run(full_run, Distributed::kOn);
    o.save_folder(folder.string()).autoresume(true).save_format(format);
    Trainer resumed(o);
    EXPECT_EQ(resumed.state().timestamp.batch(), 6);
    resumed.fit();
    EXPECT_LT(max_difference(weights(resumed), uninterrupted.weights), 1e-5) << "resumed on the ranks";
  }
  comm.barrier();
  if (comm.rank() == 0) {
    TrainerOptions o = gpt_run({Sharding::kNone, false, "12ba"}, Distributed::kOff);
    o.load_path((folder / "ep0-ba6.ckpt").string());
    Trainer alone(o);
    alone.fit();
    EXPECT_LT(max_difference(weights(alone), uninterrupted.weights), 1e-5) << "resumed in one process";
    baton::remove_tree(folder);
  }
  comm.barrier();
}

TEST(TrainerSharding, ItsCheckpointsResumeOnTheRanksAndInOneProcess) {
  expect_checkpoints_resume(Sharding::kGradients, SaveFormat::kFull);
  expect_checkpoints_resume(Sharding::kFull, SaveFormat::kFull);
}

TEST(TrainerSharding, ShardedCheckpointsResumeOnTheRanksAndInOneProcess) {
  expect_checkpoints_resume(Sharding::kOptimizer, SaveFormat::kSharded);
  expect_checkpoints_resume(Sharding::kFull, SaveFormat::kSharded);
}

TEST(TrainerSharding, WhatCannotWorkOnShardsIsRefusedByName) {
  TrainerOptions ema = gpt_run({Sharding::kFull}, Distributed::kOn);
  ema.algorithms({std::make_shared<Ema>()});
  EXPECT_THAT(testing::error_of([&] { Trainer t(ema); }),
              HasSubstr("sharding: full: algorithm 'Ema' needs whole parameters; remove it or set sharding: none"));
  TrainerOptions unit = gpt_run({Sharding::kFull}, Distributed::kOn);
  unit.shard_unit({"Bottleneck"});
  EXPECT_THAT(testing::error_of([&] { Trainer t(unit); }),
              HasSubstr("shard_unit: the model has no Bottleneck block (its blocks: Block)"));
  TrainerOptions sam = gpt_run({Sharding::kGradients}, Distributed::kOn);
  sam.algorithms({std::make_shared<Sam>()});
  EXPECT_THAT(testing::error_of([&] { Trainer t(sam); }),
              HasSubstr("sharding: gradients: algorithm 'Sam' needs whole gradients"));
  TrainerOptions adaptive = gpt_run({Sharding::kGradients}, Distributed::kOn);
  adaptive.algorithms(
      {std::make_shared<GradientClipping>(GradientClippingOptions().clipping_type(ClippingType::kAdaptive))});
  EXPECT_THAT(testing::error_of([&] { Trainer t(adaptive); }), HasSubstr("'GradientClipping' needs whole gradients"));
  TrainerOptions freezing = gpt_run({Sharding::kOptimizer}, Distributed::kOn);
  freezing.algorithms({std::make_shared<LayerFreezing>()});
  EXPECT_THAT(testing::error_of([&] { Trainer t(freezing); }), HasSubstr("'LayerFreezing' freezes layers mid-run"));
}

}  // namespace
}  // namespace baton
