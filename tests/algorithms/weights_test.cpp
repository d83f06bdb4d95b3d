// The algorithms on weights and gradients (src/algorithms/weights.cpp): each one's effect.
#include "baton/algorithms/algorithms.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include <ATen/autocast_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "algorithms/algorithms_fixtures.h"
#include "baton/algorithms/registry.h"
#include "baton/core/grad_scaler.h"
#include "baton/core/logger.h"
#include "baton/core/state.h"
#include "baton/models/surgery.h"
#include "baton/models/zoo.h"
#include "baton/nas/space.h"
#include "baton/optim/optimizers.h"
#include "baton/train/one_shot.h"
#include "baton/train/trainer.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton {
namespace {

using namespace algorithms_fixtures;  // NOLINT(google-build-using-namespace)

using ::testing::HasSubstr;
using testing::Probe;
using testing::quadrants;

at::Tensor flat_weights(torch::nn::Module& m) {
  std::vector<at::Tensor> parts;
  for (const auto& p : m.parameters()) parts.push_back(p.detach().flatten().clone());
  return torch::cat(parts);
}

// ---- Weights and gradients ----

TEST(LayerFreezing, AFrozenLayerGetsNoGradientAfterItsFreezePoint) {
  auto freezing = std::make_shared<LayerFreezing>(LayerFreezingOptions().freeze_start(0.0).freeze_level(1.0));
  // fashion_cnn has 4 layers with parameters (c1, c2, f1, f2); after epoch 1 of 4, 1 is frozen, after 2, 2.
  std::map<int64_t, bool> c1_grad_at_epoch;
  at::Tensor c1_at_freeze;
  auto probe = std::make_shared<Probe>([&](Event e, State& s) {
    auto params = s.model->named_parameters();
    if (e == Event::kAfterTrainBatch)
      c1_grad_at_epoch[s.timestamp.epoch()] = params["module.c1.weight"].grad().defined();
    if (e == Event::kEpochEnd && s.timestamp.epoch() == 1) c1_at_freeze = params["module.c1.weight"].detach().clone();
  });
  TrainerOptions options = image_options().max_duration("4ep").algorithms({freezing}).callbacks({probe});
  Trainer trainer(options);
  const at::Tensor f2_before = options.model()->named_parameters()["module.f2.weight"].detach().clone();
  trainer.fit();
  EXPECT_TRUE(c1_grad_at_epoch[0]);
  EXPECT_FALSE(c1_grad_at_epoch[1]);
  EXPECT_FALSE(c1_grad_at_epoch[3]);
  auto params = options.model()->named_parameters();
  EXPECT_TRUE(params["module.c1.weight"].equal(c1_at_freeze));  // not stepped since (momentum, decay included)
  EXPECT_FALSE(params["module.f2.weight"].equal(f2_before));
  EXPECT_EQ(freezing->frozen_layers(), 4);  // at the last epoch's end the whole run is done: all of them
}

TEST(LayerFreezing, AFreezeIntervalInBatchesFreezesWithinAnEpoch) {
  LayerFreezingOptions o;
  o.freeze_start(0.0);
  o.freeze_interval(Time::from_batch(2));
  auto freezing = std::make_shared<LayerFreezing>(o);
  // 8 batches, checked every 2: after batch 2 of 8 a quarter of the 4 layers (c1), after 4 half (c1, c2).
  std::vector<int64_t> c1_trained, c2_trained;
  auto probe = std::make_shared<Probe>([&](Event e, State& s) {
    if (e != Event::kAfterTrainBatch) return;
    auto params = s.model->named_parameters();
    if (params["module.c1.weight"].grad().defined()) c1_trained.push_back(s.timestamp.batch());
    if (params["module.c2.weight"].grad().defined()) c2_trained.push_back(s.timestamp.batch());
  });
  TrainerOptions options = image_options().max_duration("8ba").algorithms({freezing}).callbacks({probe});
  Trainer trainer(options);
  trainer.fit();
  EXPECT_EQ(c1_trained, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(c2_trained, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(freezing->frozen_layers(), 4);
  o.freeze_interval(Time::from_batch(0));
  EXPECT_THROW(LayerFreezing{o}, std::invalid_argument);
  o.freeze_interval(Time::from_duration(0.5));
  EXPECT_THROW(LayerFreezing{o}, std::invalid_argument);
}

TEST(Ema, AveragedWeightsDifferAreUsedForEvalAndRestoredAfter) {
  auto ema = std::make_shared<Ema>(EmaOptions().half_life(Time::from_batch(2)));
  at::Tensor live_at_end, at_eval, at_next_start;
  auto probe = std::make_shared<Probe>([&](Event e, State& s) {
    const int64_t batch = s.timestamp.batch();
    if (e == Event::kBatchEnd && batch == 4) live_at_end = flat_weights(*s.model);
    if (e == Event::kEvalStart && batch == 4) at_eval = flat_weights(*s.model);
    if (e == Event::kBatchStart && batch == 4) at_next_start = flat_weights(*s.model);
  });
  TrainerOptions options =
      image_options().max_duration("6ba").eval_interval("4ba").algorithms({ema}).callbacks({probe});
  Trainer trainer(options);
  trainer.fit();
  ASSERT_TRUE(live_at_end.defined() && at_eval.defined() && at_next_start.defined());
  EXPECT_FALSE(at_eval.equal(live_at_end));       // evaluation saw the average
  EXPECT_TRUE(at_next_start.equal(live_at_end));  // and training went on with the live weights
  // At the end the model holds the average; the live weights are kept in the algorithm's state.
  EXPECT_TRUE(ema->swapped_in());
  const StateDict sd = ema->state_dict();
  EXPECT_FALSE(sd.tensors.empty());
  EXPECT_FALSE(sd.tensors.at("module.f2.weight").equal(options.model()->named_parameters()["module.f2.weight"]));
}

TEST(Ema, UpdatesPerEpochToo) {
  // Epoch-wise updates happen at epoch_end, when the last batch's checkpoint swap may be in place.
  auto ema = std::make_shared<Ema>(EmaOptions().half_life(Time::from_epoch(1)).update_interval(Time::from_epoch(1)));
  std::vector<at::Tensor> at_epoch_end;
  auto probe = std::make_shared<Probe>([&](Event e, State& s) {
    if (e == Event::kEpochEnd) at_epoch_end.push_back(flat_weights(*s.model));
  });
  TrainerOptions options = image_options().max_duration("3ep").algorithms({ema}).callbacks({probe});
  Trainer trainer(options);
  trainer.fit();
  ASSERT_EQ(at_epoch_end.size(), 3U);
  // First update copies (epoch 1), then ema = 0.5 ema + 0.5 w at epochs 2 and 3.
  const at::Tensor want = (at_epoch_end[0] * 0.5 + at_epoch_end[1] * 0.5) * 0.5 + at_epoch_end[2] * 0.5;
  EXPECT_TRUE(flat_weights(*options.model()).allclose(want, 1e-5, 1e-6));
}

TEST(Ema, CheckpointsHoldTheAverageAndResumeBitwise) {
  const baton::testing::TempDir dir_tmp("ema");
  const std::filesystem::path dir = dir_tmp.path();
  std::filesystem::remove_all(dir);
  auto run = [&](const std::string& duration, bool autoresume) {
    TrainerOptions o = image_options()
                           .max_duration(duration)
                           .algorithms({std::make_shared<Ema>(EmaOptions().half_life(Time::from_batch(3)))})
                           .save_folder(dir.string())
                           .save_interval("2ba")
                           .autoresume(autoresume)
                           .deterministic(true);
    Trainer trainer(o);
    trainer.fit();
    return flat_weights(*o.model());
  };
  const at::Tensor straight = run("8ba", false);
  std::filesystem::remove_all(dir);
  run("4ba", false);
  const at::Tensor resumed = run("8ba", true);
  EXPECT_TRUE(resumed.equal(straight));
  std::filesystem::remove_all(dir);
}

TEST(Swa, AveragesTheWeightsBetweenStartAndEnd) {
  std::vector<at::Tensor> seen;
  auto probe = std::make_shared<Probe>([&](Event e, State& s) {
    const int64_t batch = s.timestamp.batch();
    if (e == Event::kBatchEnd && batch >= 5 && batch < 9) seen.push_back(flat_weights(*s.model));
  });
  auto swa = std::make_shared<Swa>(SwaOptions()
                                       .swa_start(Time::from_duration(0.5))
                                       .swa_end(Time::from_duration(0.9))
                                       .update_interval(Time::from_batch(1)));
  TrainerOptions options = image_options().max_duration("10ba").algorithms({swa}).callbacks({probe});
  Trainer trainer(options);
  trainer.fit(Time::from_batch(9));  // the model takes the average at batch 9
  ASSERT_EQ(seen.size(), 4U);
  EXPECT_TRUE(swa->done());
  EXPECT_EQ(swa->num_averaged(), 4);
  EXPECT_TRUE(torch::allclose(flat_weights(*options.model()), torch::stack(seen).mean(0), 1e-5, 1e-6));
}

TEST(GradientClipping, NormValueAndAdaptive) {
  Bench b;
  auto grads = [&](double scale) {
    for (auto& p : b.model->parameters()) p.mutable_grad() = torch::randn_like(p) * scale;
  };
  auto total_norm = [&] {
    double sq = 0;
    for (auto& p : b.model->parameters()) sq += p.grad().pow(2).sum().item<double>();
    return std::sqrt(sq);
  };
  grads(10.0);
  GradientClipping(GradientClippingOptions().clipping_type(ClippingType::kNorm).clipping_threshold(1.0))
      .apply(Event::kAfterTrainBatch, b.state, b.logger);
  EXPECT_NEAR(total_norm(), 1.0, 1e-3);
  grads(10.0);
  GradientClipping(GradientClippingOptions().clipping_type(ClippingType::kValue).clipping_threshold(0.5))
      .apply(Event::kAfterTrainBatch, b.state, b.logger);
  for (auto& p : b.model->parameters()) EXPECT_LE(p.grad().abs().max().item<double>(), 0.5 + 1e-7);
  grads(10.0);
  GradientClipping(GradientClippingOptions().clipping_type(ClippingType::kAdaptive).clipping_threshold(0.01))
      .apply(Event::kAfterTrainBatch, b.state, b.logger);
  for (auto& p : b.model->parameters()) {
    if (p.dim() < 2) continue;
    const at::Tensor ratio = p.grad().flatten(1).norm(2, {1}) / p.detach().flatten(1).norm(2, {1}).clamp_min(1e-3);
    EXPECT_LE(ratio.max().item<double>(), 0.01 + 1e-5);
  }
}

// Counts forward calls of the model it wraps.
struct CountingImpl : torch::nn::Module {
  explicit CountingImpl(torch::nn::AnyModule m) : inner(std::move(m)) { register_module("inner", inner.ptr()); }
  at::Tensor forward(const at::Tensor& x) {
    ++calls;
    return inner.forward(x);
  }
  torch::nn::AnyModule inner;
  int calls = 0;
};
TORCH_MODULE(Counting);

TEST(Sam, TakesTwoForwardBackwardPassesPerStep) {
  for (bool with_sam : {false, true}) {
    torch::manual_seed(0);
    auto base = make_model("fashion_cnn", ModelOptions().input_shape({1, 16, 16}).num_classes(4));
    Counting counting(std::dynamic_pointer_cast<Classifier>(base)->module());
    auto model = std::make_shared<Classifier>(counting.ptr());
    TrainerOptions o = image_options().model(model).optimizers(
        {make_optimizer(OptimizerOptions().name("sgd").lr(0.05), model->parameters())});
    if (with_sam) o.algorithms({std::make_shared<Sam>(SamOptions().rho(0.05))});
    Trainer trainer(o.max_duration("3ba"));
    trainer.fit();
    EXPECT_EQ(counting->calls, with_sam ? 6 : 3);
  }
}

// amp_fp16's first backward can overflow: SAM must then leave the weights as they were (not add and
// subtract inf * 0 = NaN), and hand the scaler gradients that make it skip the step.
TEST(Sam, AnOverflowedFirstGradientLeavesTheWeightsIntact) {
  Bench b;
  b.state.grad_scaler = std::make_shared<GradScaler>();
  b.state.optimizers = {make_optimizer(OptimizerOptions().name("sgd").lr(0.1), b.model->parameters())};
  const at::Tensor before = flat_weights(*b.model);
  for (auto& p : b.model->parameters()) p.mutable_grad() = torch::ones_like(p);
  b.model->parameters()[0].mutable_grad()[0] = std::numeric_limits<float>::infinity();
  Sam sam(SamOptions().rho(0.05));
  sam.apply(Event::kAfterTrainBatch, b.state, b.logger);
  const at::Tensor after = flat_weights(*b.model);
  EXPECT_TRUE(after.isfinite().all().item<bool>());
  EXPECT_TRUE(after.equal(before));  // no perturbation: added and taken away, exactly
  // The second pass ran at the same weights; its (finite) gradients are what the scaler unscales.
  EXPECT_TRUE(b.state.grad_scaler->step(*b.state.optimizers[0]));
  EXPECT_TRUE(flat_weights(*b.model).isfinite().all().item<bool>());
}

TEST(SelectiveBackprop, KeepsTheHardestExamplesByTheConfiguredFraction) {
  Bench b;
  b.state.timestamp =
      Timestamp().to_next_batch(8).to_next_batch(8).to_next_batch(8).to_next_batch(8).to_next_batch(8).to_next_batch(
          8);  // batch 6 of 10: inside [0.5, 0.9), even
  SelectiveBackprop sb(SelectiveBackpropOptions().keep(0.25));
  ASSERT_TRUE(sb.match(Event::kAfterDataloader, b.state));
  const Batch before = b.state.batch;
  at::Tensor losses;
  {
    torch::NoGradGuard no_grad;
    losses = b.model->loss_per_example(b.model->forward(before), before);
  }
  sb.apply(Event::kAfterDataloader, b.state, b.logger);
  ASSERT_EQ(b.state.batch.size(), 2);
  const at::Tensor hardest = std::get<0>(std::get<1>(losses.topk(2)).sort());
  EXPECT_TRUE(b.state.batch.input.equal(before.input.index_select(0, hardest)));
  EXPECT_TRUE(b.state.batch.target.equal(before.target.index_select(0, hardest)));
  b.state.timestamp = Timestamp().to_next_batch(8);  // batch 1: before start
  EXPECT_FALSE(sb.match(Event::kAfterDataloader, b.state));
}

}  // namespace
}  // namespace baton
