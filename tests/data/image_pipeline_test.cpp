// What every image data set shares (src/data/image_pipeline.cpp): work spread over the decode
// threads with the first error rethrown, a batch with bad examples replaced and reported (or an
// error), and uint8 pixels made normalised float.
#include "data/image_pipeline.h"

#include <atomic>
#include <set>
#include <stdexcept>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/test_util.h"

namespace baton {
namespace {

using image_detail::ImagePipeline;
using testing::error_of;
using ::testing::HasSubstr;

ImageFolderOptions small(BadFiles bad = BadFiles::kError) {
  return ImageFolderOptions().channels(1).image_size(4).workers(3).bad_files(bad).mean({0.5}).std({0.25});
}

TEST(ImagePipeline, RunCallsEachIndexOnceOnTheThreadsAndRethrowsTheFirstError) {
  const ImagePipeline pipeline(small());
  std::vector<std::atomic<int>> calls(200);
  pipeline.run(200, [&](int64_t i) { ++calls[static_cast<std::size_t>(i)]; });
  for (const auto& c : calls) EXPECT_EQ(c.load(), 1);
  EXPECT_EQ(error_of([&] {
              pipeline.run(50, [](int64_t i) {
                if (i == 17) throw std::runtime_error("example 17 failed");
              });
            }),
            "example 17 failed");
}

// Example `id` is an image filled with its id, labelled id; the ids in `bad` fail as a corrupt file.
std::function<int64_t(int64_t, at::Tensor&)> examples(std::set<int64_t> bad) {
  return [bad](int64_t id, at::Tensor& out) {
    if (bad.count(id)) throw ImageError("x" + std::to_string(id) + ".jpg: not a JPEG");
    out.fill_(id);
    return id;
  };
}

TEST(ImagePipeline, ABadExampleIsReplacedByTheNextAndReportedOrIsAnError) {
  const ImagePipeline skipping(small(BadFiles::kSkip));
  const Batch batch = skipping.batch(torch::tensor({0, 2, 5}), 6, examples({2, 3, 5}));
  EXPECT_EQ(batch.input.sizes(), (std::vector<int64_t>{3, 1, 4, 4}));
  EXPECT_EQ(batch.input.scalar_type(), torch::kByte);
  EXPECT_TRUE(torch::equal(batch.target, torch::tensor({0, 4, 0}, torch::kLong)));  // 2 -> 4; 5 -> 0 (wraps)
  EXPECT_EQ(batch.input[1].max().item<int64_t>(), 4);
  const auto skipped = skipping.skipped();
  ASSERT_EQ(skipped.size(), 3U);
  EXPECT_THAT(skipped[0] + skipped[1] + skipped[2], HasSubstr("x2.jpg: not a JPEG"));
  const ImagePipeline strict(small(BadFiles::kError));
  EXPECT_THAT(error_of([&] { strict.batch(torch::tensor({1, 2}), 6, examples({2})); }), HasSubstr("x2.jpg"));
}

TEST(ImagePipeline, PixelsBecomeNormalisedFloat) {
  const ImagePipeline pipeline(small());
  EXPECT_EQ(pipeline.input_shape(), (std::vector<int64_t>{1, 4, 4}));
  const at::Tensor pixels = torch::full({2, 1, 4, 4}, 255, torch::kByte);
  const at::Tensor x = pipeline.finish_inputs(pixels);
  EXPECT_EQ(x.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::allclose(x, torch::full({2, 1, 4, 4}, 2.0)));  // (1 - 0.5) / 0.25
  EXPECT_THAT(error_of([] { ImagePipeline(ImageFolderOptions().channels(2)); }), HasSubstr("channels"));
}

}  // namespace
}  // namespace baton
