// The data augmentations (src/algorithms/augment.cpp): each one's effect, not merely that it runs.
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

}  // namespace
}  // namespace baton
