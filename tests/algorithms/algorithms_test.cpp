// Each algorithm's effect, not merely that it runs.
#include "baton/algorithms/algorithms.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include <ATen/autocast_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

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

using ::testing::HasSubstr;
using testing::Probe;
using testing::quadrants;

TrainerOptions image_options(const std::string& model_name = "fashion_cnn", int64_t n = 64, int64_t batch = 16) {
  torch::manual_seed(0);
  auto model = make_model(model_name, ModelOptions().input_shape({1, 16, 16}).num_classes(4));
  return TrainerOptions()
      .model(model)
      .train_dataloader(std::make_shared<DataLoader>(quadrants(n, 1), DataLoaderOptions().batch_size(batch).seed(3)))
      .eval_dataloader(
          "eval", std::make_shared<DataLoader>(quadrants(32, 2), DataLoaderOptions().batch_size(16).shuffle(false)))
      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.05).momentum(0.9), model->parameters())})
      .progress_bar(false)
      .console_log_interval("0ba")
      .eval_interval("0ep");
}

// A State with a model and a batch, for calling apply() directly.
struct Bench {
  // ImageNet's ResNets shrink an image 32 times: 64x64 leaves them 2x2 at the end.
  explicit Bench(const std::string& model_name = "fashion_cnn") {
    const int64_t side = model_name == "resnet18" || model_name == "resnet50" ? 64 : 16;
    torch::manual_seed(0);
    auto spec = ModelOptions().input_shape({1, side, side}).num_classes(4);
    if (model_name == "cnn_space") {  // a model space: an architecture with every kind of convolution
      spec.arch({{"stage1_op", "dwsep3x3"},
                 {"stage1_width", 16},
                 {"stage1_depth", 2},
                 {"stage2_op", "conv5x5"},
                 {"stage2_width", 32},
                 {"stage2_depth", 1},
                 {"stage3_op", "conv3x3"},
                 {"stage3_width", 16},
                 {"stage3_depth", 1}});
    }
    model = make_model(model_name, spec);
    state.model = model;
    state.max_duration = Time::from_batch(10);
    state.batch = {torch::randn({8, 1, side, side}), torch::randint(0, 4, {8})};
  }
  std::shared_ptr<Model> model;
  State state;
  Logger logger{state};
};

at::Tensor flat_weights(torch::nn::Module& m) {
  std::vector<at::Tensor> parts;
  for (const auto& p : m.parameters()) parts.push_back(p.detach().flatten().clone());
  return torch::cat(parts);
}

// ---- What keeps the train step out of a CUDA graph ----

TEST(Algorithms, ThoseActingInsideTheTrainStepSaySoAndTheOthersDoNot) {
  Bench b;
  EXPECT_EQ(make_algorithm("label_smoothing")->graph_blocker(b.state),
            "acts on before_loss, after_loss, inside the train step");
  EXPECT_EQ(make_algorithm("gradient_clipping")->graph_blocker(b.state),
            "acts on after_train_batch, inside the train step");
  EXPECT_THAT(make_algorithm("mixup")->graph_blocker(b.state), HasSubstr("before_forward"));
  b.state.timestamp = b.state.timestamp.to_next_batch(8, 0, 0.1);  // batch 1: not a SAM step of interval 2
  EXPECT_THAT(make_algorithm("sam", {{"interval", 2}})->graph_blocker(b.state), HasSubstr("after_train_batch"));
  EXPECT_THAT(make_algorithm("single_path")->graph_blocker(b.state), HasSubstr("samples a path of the supernet"));
  for (const std::string name : {"ema", "progressive_resizing", "cutout", "blurpool", "layer_freezing", "swa"}) {
    EXPECT_EQ(make_algorithm(name)->graph_blocker(b.state), "") << name;
  }
}

// ---- Targets and inputs ----

TEST(LabelSmoothing, SmoothsTargetsForTheLossAndRestoresThem) {
  Bench b;
  b.state.outputs = torch::zeros({8, 4});
  const at::Tensor labels = b.state.batch.target.clone();
  LabelSmoothing ls(LabelSmoothingOptions().smoothing(0.2));
  ls.apply(Event::kBeforeLoss, b.state, b.logger);
  const at::Tensor t = b.state.batch.target;
  ASSERT_EQ(t.sizes(), (std::vector<int64_t>{8, 4}));
  for (int64_t i = 0; i < 8; ++i) {
    for (int64_t c = 0; c < 4; ++c) {
      EXPECT_NEAR(t[i][c].item<double>(), c == labels[i].item<int64_t>() ? 0.85 : 0.05, 1e-6);
    }
  }
  ls.apply(Event::kAfterLoss, b.state, b.logger);
  EXPECT_TRUE(b.state.batch.target.equal(labels));
}

// Inputs whose rows are one-hot: a mixed row shows both examples and their weights.
TEST(MixUp, MixesInputsAndInterpolatesTheLoss) {
  Bench b;
  b.state.batch = {torch::eye(8), torch::arange(8) % 4};
  MixUp mixup(MixOptions().alpha(1.0).interpolate_loss(true));
  torch::manual_seed(5);
  mixup.apply(Event::kBeforeForward, b.state, b.logger);
  const double lambda = mixup.mixing();
  ASSERT_GT(lambda, 0.0);
  ASSERT_LE(lambda, 0.5);
  const at::Tensor x = b.state.batch.input;
  std::vector<int64_t> perm(8);
  for (int64_t i = 0; i < 8; ++i) {
    // Row i: 1 - λ at i, λ at perm[i] (or 1 when perm[i] == i).
    const at::Tensor row = x[i].clone();
    if (row[i].item<double>() > 0.999) {
      perm[static_cast<std::size_t>(i)] = i;
      continue;
    }
    EXPECT_NEAR(row[i].item<double>(), 1.0 - lambda, 1e-6);
    row[i] = 0;
    perm[static_cast<std::size_t>(i)] = row.argmax().item<int64_t>();
    EXPECT_NEAR(row.max().item<double>(), lambda, 1e-6);
  }
  // The loss: (1 - λ) L(outputs, y) + λ L(outputs, y[perm]).
  const at::Tensor outputs = torch::randn({8, 4});
  const at::Tensor y = b.state.batch.target;
  b.state.outputs = outputs;
  b.state.loss = soft_cross_entropy(outputs, y);
  mixup.apply(Event::kBeforeBackward, b.state, b.logger);
  const at::Tensor yp = y.index_select(0, torch::tensor(perm));
  const double want = (1.0 - lambda) * soft_cross_entropy(outputs, y).item<double>() +
                      lambda * soft_cross_entropy(outputs, yp).item<double>();
  EXPECT_NEAR(b.state.loss.item<double>(), want, 1e-5);
  EXPECT_TRUE(mixup.interpolate_loss());
}

TEST(MixUp, WithoutInterpolationMixesTheTargetsForTheLoss) {
  Bench b;
  b.state.outputs = torch::zeros({8, 4});
  MixUp mixup(MixOptions().alpha(0.4));
  mixup.apply(Event::kBeforeForward, b.state, b.logger);
  const at::Tensor labels = b.state.batch.target.clone();
  mixup.apply(Event::kBeforeLoss, b.state, b.logger);
  const at::Tensor soft = b.state.batch.target;
  ASSERT_EQ(soft.dim(), 2);
  EXPECT_TRUE(torch::allclose(soft.sum(1), torch::ones({8})));
  // The original class keeps at least half of the weight.
  for (int64_t i = 0; i < 8; ++i) EXPECT_GE(soft[i][labels[i].item<int64_t>()].item<double>(), 0.5 - 1e-6);
  mixup.apply(Event::kAfterLoss, b.state, b.logger);
  EXPECT_TRUE(b.state.batch.target.equal(labels));
}

TEST(CutMix, PastesABoxWhoseAreaIsTheMixingWeight) {
  Bench b;
  // Image i is filled with the value i: a pixel shows which image it came from.
  b.state.batch.input = torch::arange(8, torch::kFloat).view({8, 1, 1, 1}).expand({8, 1, 16, 16}).contiguous();
  CutMix cutmix(MixOptions().alpha(1.0));
  torch::manual_seed(3);
  cutmix.apply(Event::kBeforeForward, b.state, b.logger);
  const at::Tensor x = b.state.batch.input;
  for (int64_t i = 0; i < 8; ++i) {
    const double foreign = (x[i] != static_cast<float>(i)).sum().item<double>() / 256.0;
    const at::Tensor values = std::get<0>(at::_unique(x[i]));
    EXPECT_LE(values.numel(), 2);
    if (values.numel() == 2) {
      EXPECT_NEAR(foreign, cutmix.mixing(), 1e-9);
    }
  }
  EXPECT_GT(cutmix.mixing(), 0.0);
}

TEST(CutOut, ZeroesASquareOfTheGivenSideInEachImage) {
  Bench b;
  b.state.batch.input = torch::ones({8, 1, 16, 16});
  CutOut cutout(CutOutOptions().num_holes(1).length(0.25));
  cutout.apply(Event::kAfterDataloader, b.state, b.logger);
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ((b.state.batch.input[i] == 0).sum().item<int64_t>(), 16);  // 4 x 4
  // Different places in different images.
  EXPECT_FALSE(b.state.batch.input[0].equal(b.state.batch.input[1]) &&
               b.state.batch.input[1].equal(b.state.batch.input[2]));
}

TEST(ColOut, DropsRowsAndColumns) {
  Bench b;
  const at::Tensor before = b.state.batch.input.clone();
  ColOut colout(ColOutOptions().p_row(0.25).p_col(0.5));
  colout.apply(Event::kAfterDataloader, b.state, b.logger);
  EXPECT_EQ(b.state.batch.input.sizes(), (std::vector<int64_t>{8, 1, 12, 8}));
  // What is left are original pixels: the first image's values are a subset of its old values.
  EXPECT_TRUE(torch::isin(b.state.batch.input[0].flatten(), before[0].flatten()).all().item<bool>());
}

TEST(RandAugment, ChangesImagesKeepsShapesAndIsSeeded) {
  Bench b;
  const at::Tensor before = b.state.batch.input.clone();
  RandAugment ra(RandAugmentOptions().severity(9).depth(2));
  torch::manual_seed(11);
  ra.apply(Event::kAfterDataloader, b.state, b.logger);
  const at::Tensor once = b.state.batch.input.clone();
  EXPECT_EQ(once.sizes(), before.sizes());
  EXPECT_TRUE(torch::isfinite(once).all().item<bool>());
  int changed = 0;
  for (int64_t i = 0; i < 8; ++i) changed += once[i].allclose(before[i]) ? 0 : 1;
  EXPECT_GE(changed, 4);
  b.state.batch.input = before.clone();
  torch::manual_seed(11);
  ra.apply(Event::kAfterDataloader, b.state, b.logger);
  EXPECT_TRUE(b.state.batch.input.equal(once));
  EXPECT_THAT(testing::error_of([] {
                make_algorithm("randaugment", {{"augmentation_set", "colour"}});
              }),
              HasSubstr("randaugment.augmentation_set: expected all, geometric or intensity, got 'colour'"));
}

TEST(ProgressiveResizing, ChangesTheInputSizeOnSchedule) {
  auto recorder = std::make_shared<Probe>([](Event, State&) {});
  std::vector<int64_t> sides;
  auto probe = std::make_shared<Probe>([&](Event e, State& s) {
    if (e == Event::kBeforeForward) sides.push_back(s.batch.input.size(2));
  });
  Trainer trainer(
      image_options("resnet20", 160, 16)
          .max_duration("10ba")
          .algorithms({std::make_shared<ProgressiveResizing>(
              ProgressiveResizingOptions().initial_scale(0.5).finetune_fraction(0.2).delay_fraction(0.2).size_increment(
                  4))})
          .callbacks({probe}));
  trainer.fit();
  // 10 batches: 0.5 until 20%, growing to full size at 80%, then full: 8, 8, 8, then 8..16, then 16.
  ASSERT_EQ(sides.size(), 10U);
  EXPECT_EQ(sides.front(), 8);
  EXPECT_EQ(sides.back(), 16);
  EXPECT_TRUE(std::is_sorted(sides.begin(), sides.end()));
  EXPECT_GT(std::count_if(sides.begin(), sides.end(), [](int64_t s) { return s > 8 && s < 16; }), 0);
  ProgressiveResizing pr(ProgressiveResizingOptions().initial_scale(0.5).finetune_fraction(0.2).delay_fraction(0.5));
  EXPECT_DOUBLE_EQ(pr.scale_at(0.4), 0.5);
  EXPECT_DOUBLE_EQ(pr.scale_at(0.65), 0.75);
  EXPECT_DOUBLE_EQ(pr.scale_at(0.9), 1.0);
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

// One-shot search: the supernet trains a path per batch; a path's evaluation inherits its weights.
TEST(SinglePath, TrainsThePathOfEachBatchAndEvaluatePathInheritsTheWeights) {
  torch::manual_seed(0);
  const nlohmann::json widths = {{"stage1_width", 16}, {"stage2_width", 16}, {"stage3_width", 16}};
  auto model =
      make_model("cnn_space", ModelOptions().input_shape({1, 16, 16}).num_classes(4).one_shot(true).arch(widths));
  nas::SupernetImpl* supernet = nas::find_supernet(*model);
  ASSERT_NE(supernet, nullptr);
  std::vector<nlohmann::json> paths;
  auto probe = std::make_shared<Probe>([&](Event e, State& s) {
    if (e == Event::kBeforeForward) paths.push_back(nas::find_supernet(*s.model)->active());
  });
  TrainerOptions options = image_options();
  options.model(model)
      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.05).momentum(0.9), model->parameters())})
      .algorithms({make_algorithm("single_path", {{"sampling", "fair"}, {"seed", 5}})})
      .callbacks({probe})
      .max_duration("10ba");
  Trainer trainer(options);
  trainer.fit();
  ASSERT_EQ(paths.size(), 10U);
  std::set<std::string> ops;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    EXPECT_EQ(paths[i], supernet->sample(5, static_cast<int64_t>(i), true)) << i;
    if (i < 5) ops.insert(paths[i]["stage2_op"].get<std::string>());
  }
  EXPECT_EQ(ops.size(), 5U);  // fair: the first 5 batches take each of the 5 ops once

  std::shared_ptr<torch::nn::BatchNorm2dImpl> stem_norm;  // on every path
  for (const auto& m : model->modules()) {
    if (!stem_norm) stem_norm = std::dynamic_pointer_cast<torch::nn::BatchNorm2dImpl>(m);
  }
  ASSERT_TRUE(stem_norm);
  const auto a = evaluate_path(trainer, paths[3], 2);
  EXPECT_EQ(stem_norm->num_batches_tracked.item<int64_t>(), 2);  // statistics of 2 batches, anew
  ASSERT_EQ(a.count("eval/accuracy"), 1U);
  (void)evaluate_path(trainer, paths[4], 3);
  EXPECT_EQ(evaluate_path(trainer, paths[3], 2), a);  // the same path, the same batches: the same metrics
  EXPECT_EQ(supernet->active(), paths[3]);
  EXPECT_THAT(testing::error_of([&] {
                evaluate_path(trainer, {{"stage1_op", "conv3x3"}}, 0);
              }),
              HasSubstr("the path has no value for"));
  EXPECT_THAT(testing::error_of([&] { Trainer plain(image_options().algorithms({make_algorithm("single_path")})); }),
              HasSubstr("single_path: the model holds no one-shot supernet"));
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

// ---- Surgery and layout ----

TEST(ChannelsLast, ConvWeightsAndInputsAreChannelsLastAndTheModelTrains) {
  TrainerOptions o = image_options().max_duration("2ba").algorithms({std::make_shared<ChannelsLast>()});
  bool input_nhwc = false;
  o.callbacks({std::make_shared<Probe>([&](Event e, State& s) {
    // Real NHWC strides (channel stride 1) even for one channel, so convolutions after it stay NHWC.
    if (e == Event::kBeforeForward) {
      input_nhwc = s.batch.input.is_contiguous(at::MemoryFormat::ChannelsLast) && s.batch.input.stride(1) == 1;
    }
  })});
  Trainer trainer(o);
  trainer.fit();
  EXPECT_TRUE(input_nhwc);
  const at::Tensor c1 = o.model()->named_parameters()["module.c1.weight"];
  EXPECT_TRUE(c1.is_contiguous(at::MemoryFormat::ChannelsLast) && c1.stride(1) == 1);
  // And so the first convolution's output is NHWC too.
  const at::Tensor out = torch::conv2d(torch::randn({2, 1, 16, 16})
                                           .contiguous(at::MemoryFormat::ChannelsLast)
                                           .as_strided({2, 1, 16, 16}, {256, 1, 16, 1}),
                                       c1.detach(), {}, 1, 1);
  EXPECT_TRUE(out.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(std::isfinite(trainer.summary().train_loss));
}

// memory_format: auto turns channels-last on for the zoo's models with 4-d weights on the CPU:
// each must give the outputs and gradients it gives in NCHW (no view that assumes NCHW strides).
TEST(ChannelsLast, EveryZooModelWithConvolutionsGivesTheSameOutputsAndGradients) {
  int convolutional = 0;
  for (const auto& name : model_names()) {
    if (name == "gpt" || name == "gpt_space") continue;  // token indices, no images
    Bench nchw(name), nhwc(name);                        // the same seed: the same weights
    const auto params = nchw.model->parameters();
    if (std::none_of(params.begin(), params.end(), [](const at::Tensor& p) { return p.dim() == 4; })) continue;
    ++convolutional;
    // In float64: resnet50's gradients at initialisation are so ill-conditioned that float32's own
    // rounding moves them by a few percent (PyTorch's too); in float64 the layouts must agree tightly.
    for (Bench* b : {&nchw, &nhwc}) {
      b->model->to(torch::kDouble);
      b->state.batch.input = b->state.batch.input.to(torch::kDouble);
    }
    ChannelsLast layout;
    layout.apply(Event::kInit, nhwc.state, nhwc.logger);
    layout.apply(Event::kAfterDataloader, nhwc.state, nhwc.logger);
    ASSERT_EQ(nhwc.state.batch.input.stride(1), 1) << name;
    std::vector<at::Tensor> grads[2];
    at::Tensor outputs[2];
    int i = 0;
    for (Bench* b : {&nchw, &nhwc}) {
      outputs[i] = b->model->forward(b->state.batch);
      torch::nn::functional::cross_entropy(outputs[i], b->state.batch.target).backward();
      for (const auto& p : b->model->parameters()) grads[i].push_back(p.grad().contiguous());
      ++i;
    }
    // Rounding differs between the layouts' kernels: a tolerance relative to each tensor's scale; a
    // wrong stride gives errors of its scale.
    const auto close = [&](const at::Tensor& a, const at::Tensor& b) {
      const double scale = std::max(a.abs().max().item<double>(), 1e-12);
      return (a - b).abs().max().item<double>() <= 1e-9 * scale;
    };
    EXPECT_TRUE(close(outputs[0], outputs[1])) << name;
    ASSERT_EQ(grads[0].size(), grads[1].size());
    for (std::size_t k = 0; k < grads[0].size(); ++k) {
      EXPECT_TRUE(close(grads[0][k], grads[1][k]))
          << name << " parameter " << k << ": largest difference "
          << (grads[0][k] - grads[1][k]).abs().max().item<double>() << " of " << grads[0][k].abs().max().item<double>();
    }
  }
  EXPECT_EQ(convolutional, 5);  // fashion_cnn, resnet20, resnet18, resnet50, cnn_space
}

// Surgery: the modules are replaced, outputs keep their shape, the model trains and saves, and a
// run without the algorithm re-applies it when it loads the checkpoint.
void check_surgery(const std::string& model_name, const std::string& algorithm, const nlohmann::json& options,
                   const std::string& replaced_type, int want_replaced) {
  SCOPED_TRACE(algorithm);
  const baton::testing::TempDir dir_tmp("surgery");
  const std::filesystem::path dir = dir_tmp.path();
  std::filesystem::remove_all(dir);
  TrainerOptions o = image_options(model_name).max_duration("3ba").algorithms({make_algorithm(algorithm, options)});
  const auto before = o.model()->parameters().size();
  Trainer trainer(o.save_folder(dir.string()).save_interval("3ba"));
  int replaced = 0;
  for (const auto& m : o.model()->modules()) replaced += m->name() == replaced_type ? 1 : 0;
  EXPECT_EQ(replaced, want_replaced);
  EXPECT_GE(o.model()->parameters().size(), before);
  trainer.fit();
  EXPECT_TRUE(std::isfinite(trainer.summary().train_loss));
  const at::Tensor x = torch::randn({3, 1, 16, 16});
  o.model()->eval();
  const at::Tensor out = o.model()->forward(Batch{x, at::Tensor()});
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{3, 4}));

  TrainerOptions fresh = image_options(model_name).load_path((dir / "ep0-ba3.ckpt").string());
  Trainer loaded(fresh);
  ASSERT_EQ(loaded.state().algorithms.size(), 1U);  // rebuilt from the checkpoint
  fresh.model()->eval();
  EXPECT_TRUE(fresh.model()->forward(Batch{x, at::Tensor()}).allclose(out, 1e-5, 1e-6));
  std::filesystem::remove_all(dir);
}

TEST(Surgery, BlurPoolReplacesStridedConvsAndMaxPools) {
  check_surgery("resnet20", "blurpool", {}, "BlurConv2d", 4);  // 2 strided 3x3 convs, 2 strided shortcuts
  check_surgery("fashion_cnn", "blurpool", {}, "BlurMaxPool2d", 2);
}

TEST(Surgery, SqueezeExciteFollowsWideConvs) {
  check_surgery("resnet20", "squeeze_excite", {{"min_channels", 64}, {"latent_channels", 0.25}}, "SqueezeExciteConv2d",
                7);  // stage 3: 6 convs + the shortcut
}

TEST(Surgery, StochasticDepthWrapsEveryBlock) {
  check_surgery("resnet20", "stochastic_depth", {{"drop_rate", 0.5}}, "StochasticBlock", 9);
  check_surgery("resnet50", "stochastic_depth", {{"drop_rate", 0.5}}, "StochasticBlock", 16);  // bottlenecks
}

TEST(Surgery, GhostBatchNormNormalisesEachGhostBatch) {
  check_surgery("resnet20", "ghost_batchnorm", {{"ghost_batch_size", 8}}, "GhostBatchNorm2d", 21);
  // In training each group of 8 has per-channel mean ~0 after the norm (plain BatchNorm: only the batch).
  Bench b("resnet20");
  GhostBatchNorm(GhostBatchNormOptions().ghost_batch_size(4)).apply(Event::kInit, b.state, b.logger);
  torch::nn::AnyModule* ghost = nullptr;
  for (const auto& m : b.model->modules()) {
    if (auto* r = dynamic_cast<Replaceable*>(m.get())) {
      for (const auto& name : r->slot_names()) {
        if (r->slot(name).ptr()->name() == "GhostBatchNorm2d" &&
            r->slot(name).ptr()->named_buffers()["batchnorm.running_mean"].size(0) == 16) {
          ghost = &r->slot(name);
        }
      }
    }
  }
  ASSERT_NE(ghost, nullptr);
  ghost->ptr()->train();
  const at::Tensor x = torch::randn({8, 16, 4, 4}) + torch::arange(8, torch::kFloat).view({8, 1, 1, 1});
  const at::Tensor y = ghost->forward(x);
  for (int64_t g = 0; g < 2; ++g) {
    EXPECT_LT(y.narrow(0, g * 4, 4).mean({0, 2, 3}).abs().max().item<double>(), 1e-4);
  }
}

TEST(Surgery, LowPrecisionNormsComputeInBf16UnderAutocast) {
  struct NormsImpl : Replaceable {
    NormsImpl() {
      ln_ = add_slot("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({16})));
      gn_ = add_slot("gn", torch::nn::GroupNorm(torch::nn::GroupNormOptions(2, 4)));
    }
    at::Tensor forward(const at::Tensor& x) { return call(ln_, call(gn_, x)); }
    int ln_, gn_;
  };
  auto net = std::make_shared<NormsImpl>();
  auto model = std::make_shared<Classifier>(net);
  State state;
  state.model = model;
  Logger logger(state);
  const at::Tensor x = torch::randn({2, 4, 16});
  auto run = [&] {
    AutocastGuard autocast(Precision::kAmpBf16, c10::DeviceType::CPU);
    return model->forward(Batch{x, at::Tensor()});
  };
  const at::Tensor plain = run();
  EXPECT_EQ(plain.scalar_type(), at::kFloat);
  LowPrecisionGroupNorm gn;
  LowPrecisionLayerNorm ln;
  gn.apply(Event::kInit, state, logger);
  ln.apply(Event::kInit, state, logger);
  EXPECT_EQ(gn.replaced(), 1);
  EXPECT_EQ(ln.replaced(), 1);
  const at::Tensor low = run();
  EXPECT_EQ(low.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(low.to(at::kFloat).allclose(plain, 0.05, 0.05));
  EXPECT_EQ(model->forward(Batch{x, at::Tensor()}).scalar_type(), at::kFloat);  // no autocast: as before
}

// ---- Registry ----

TEST(Registry, BuildsEveryAlgorithmByNameAndRefusesBadOptions) {
  EXPECT_EQ(algorithm_names().size(), 21U);
  for (const auto& name : algorithm_names()) {
    auto a = make_algorithm(name);
    EXPECT_EQ(a->recipe_spec()["name"], name);
  }
  EXPECT_THAT(testing::error_of([] {
                make_algorithm("single_path", {{"sampling", "sometimes"}});
              }),
              HasSubstr("sampling"));
  EXPECT_THAT(testing::error_of([] { make_algorithm("mixupp"); }),
              HasSubstr("unknown algorithm 'mixupp' (known: blurpool"));
  try {
    make_algorithm("mixup", {{"alpah", 0.2}});
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(e.key(), "alpah");
    EXPECT_THAT(e.what(), HasSubstr("mixup.alpah: unknown option (known: alpha, interpolate_loss)"));
  }
  try {
    make_algorithm("ema", {{"half_life", 50}});
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(e.key(), "half_life");
    EXPECT_THAT(e.what(), HasSubstr("expected a time such as 50ba"));
  }
  EXPECT_THAT(testing::error_of([] {
                make_algorithm("label_smoothing", {{"smoothing", 1.5}});
              }),
              HasSubstr("smoothing must be in [0, 1)"));
}

}  // namespace
}  // namespace baton
