// Image transforms (src/data/image_transforms.cpp): they fold into one plan drawn from the seed, the
// epoch and the index.
#include "baton/data/images.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <png.h>
#include <torch/torch.h>

#include "baton/data/dataloader.h"
#include "baton/data/image_folder.h"
#include "baton/io/file.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;

TEST(ImageTransforms, FoldIntoOnePlanDrawnFromSeedEpochAndIndex) {
  const auto train = ImageTransforms::parse(
      nlohmann::json::parse(R"([{"random_resized_crop": {"scale": [0.25, 1.0]}}, "horizontal_flip"])"), 64, "t");
  EXPECT_TRUE(train.random());
  for (int64_t index = 0; index < 50; ++index) {
    ExampleRng a(7, 2, index), b(7, 2, index);
    const ImagePlan pa = train.plan({300, 400}, a), pb = train.plan({300, 400}, b);
    EXPECT_EQ(pa.region.top, pb.region.top);
    EXPECT_EQ(pa.flip, pb.flip);
    EXPECT_EQ(pa.out, (ImageSize{64, 64}));
    EXPECT_GE(pa.region.top, 0);
    EXPECT_LE(pa.region.top + pa.region.height, 300);
    EXPECT_LE(pa.region.left + pa.region.width, 400);
    EXPECT_GE(pa.region.height * pa.region.width, 0.25 * 300 * 400 * 0.9);
  }
  ExampleRng e1(7, 1, 3), e2(7, 2, 3);
  EXPECT_NE(train.plan({300, 400}, e1).region.left, train.plan({300, 400}, e2).region.left);
  // resize 73 then center_crop 64 of a 300x400 image: the central 263x263 of the source.
  const auto eval = ImageTransforms::parse(nlohmann::json::parse(R"([{"resize": 73}, {"center_crop": 64}])"), 64, "e");
  EXPECT_FALSE(eval.random());
  ExampleRng r(0, 0, 0);
  const ImagePlan plan = eval.plan({300, 400}, r);
  EXPECT_NEAR(plan.region.height, 300.0 * 64 / 73, 1e-9);
  EXPECT_NEAR(plan.region.top, (73 - 64) / 2 * 300.0 / 73, 1.0);
  EXPECT_THAT(error_of([&] { eval.plan({50, 50}, r); }), HasSubstr(""));  // 73x73 then 64: fits
  const auto big = ImageTransforms::parse(nlohmann::json::parse(R"([{"center_crop": 64}])"), 64, "e");
  EXPECT_EQ(error_of([&] { big.plan({50, 80}, r); }), "an image of 80x50 is smaller than center_crop's 64x64");
  // Refusals name the step.
  EXPECT_THAT(error_of([] { ImageTransforms::parse(nlohmann::json::parse(R"(["rotate"])"), 64, "t"); }),
              HasSubstr("t[0]: unknown transform 'rotate'"));
  EXPECT_THAT(error_of([] { ImageTransforms::parse(nlohmann::json::parse(R"([{"resize": 64}])"), 64, "t"); }),
              HasSubstr("t: the pipeline must end at image_size (64x64): end it with a crop"));
  EXPECT_THAT(error_of([] {
                ImageTransforms::parse(nlohmann::json::parse(R"([{"random_resized_crop": {"scale": [0.5, 0.1]}}])"), 64,
                                       "t");
              }),
              HasSubstr("t[0].random_resized_crop.scale: expected [low, high]"));
  EXPECT_THAT(error_of([] { ImageTransforms::parse(nlohmann::json::parse(R"([{"center_crop": 32}])"), 64, "t"); }),
              HasSubstr("not 32x32"));
  EXPECT_THAT(
      error_of([] {
        ImageTransforms::parse(nlohmann::json::parse(R"([{"random_resized_crop": {"scal": [0.5, 1]}}])"), 64, "t");
      }),
      HasSubstr("unknown key 't[0].random_resized_crop.scal' (known in t[0].random_resized_crop: size, scale, ratio)"));
  EXPECT_THAT(error_of([] {
                ImageTransforms::parse(nlohmann::json::parse(R"([{"horizontal_flip": {"p": 2}}, {"center_crop": 64}])"),
                                       64, "t");
              }),
              HasSubstr("t[0].horizontal_flip.p: expected a probability from 0 to 1"));
}

}  // namespace
}  // namespace baton
