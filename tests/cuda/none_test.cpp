// The stand-in for CUDA in a build whose LibTorch has none (src/cuda/none.cpp): no device, no
// memory, and what needs a GPU an error naming the fix.
#include <stdexcept>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "cuda/cuda.h"

namespace baton::cuda {
namespace {

TEST(Cuda, WithoutCudaNoDeviceIsSeenAndWhatNeedsOneSaysHowToGetIt) {
  if (built()) GTEST_SKIP() << "this LibTorch has CUDA";
  EXPECT_EQ(device_count(), 0);
  EXPECT_FALSE(supports_bf16(0));
  EXPECT_FALSE(nccl_built());
  const MemoryStats none = memory_stats(0);
  EXPECT_EQ(none.allocated + none.reserved + none.peak, 0);
  EXPECT_THAT([] { device_name(0); }, ::testing::ThrowsMessage<std::runtime_error>(::testing::HasSubstr(
                                          "has no CUDA (make build builds against python3's PyTorch with CUDA")));
  EXPECT_THAT([] { Nccl("id", 0, 1, 0); },
              ::testing::ThrowsMessage<std::runtime_error>(::testing::HasSubstr("no CUDA")));
}

}  // namespace
}  // namespace baton::cuda
