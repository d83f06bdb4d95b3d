// What baton asks of CUDA (src/cuda/): without a GPU every answer says so plainly (no device, no
// memory, an error naming the fix); with one, copies, events, streams and memory counters behave as
// cuda.h says. The training loop on a GPU is tests/gpu/gpu_test.cpp.
#include <stdexcept>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "cuda/cuda.h"

namespace baton::cuda {
namespace {

bool have_gpu() { return device_count() > 0; }

TEST(Cuda, ACopyToTheDeviceArrivesWholeAndInOrder) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device on this machine";
  const at::Tensor a = torch::arange(1000, torch::kFloat);
  const at::Tensor b = torch::randn({7, 3});
  Transfer copy({a, b}, 0);
  const std::vector<at::Tensor> on_device = copy.take();
  ASSERT_EQ(on_device.size(), 2U);
  EXPECT_TRUE(on_device[0].is_cuda());
  EXPECT_TRUE(torch::equal(on_device[0].cpu(), a));
  EXPECT_TRUE(torch::equal(on_device[1].cpu(), b));
}

TEST(Cuda, EventsTimeTheWorkBetweenThem) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device on this machine";
  const Event before(0);
  const at::Tensor x = torch::randn({1024, 1024}, torch::kCUDA);
  const at::Tensor y = x.mm(x);
  const Event after(0);
  synchronize(0);
  EXPECT_TRUE(before.done());
  EXPECT_TRUE(after.done());
  EXPECT_GE(after.seconds_since(before), 0.0);
  EXPECT_TRUE(y.is_cuda());
}

TEST(Cuda, AnOwnStreamIsNeverOneThePoolHandsOut) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device on this machine";
  const OwnStream mine(0);
  for (int i = 0; i < 40; ++i) EXPECT_NE(pool_stream_id(0), mine.id());
}

TEST(Cuda, ThePeakCounterFollowsAllocationsAndResets) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device on this machine";
  reset_peak(0);
  const int64_t before = memory_stats(0).allocated;
  {
    const at::Tensor big = torch::empty({64, 1024, 1024}, torch::TensorOptions(torch::kCUDA).dtype(torch::kFloat));
    EXPECT_GE(memory_stats(0).allocated - before, int64_t{256} << 20);
  }
  EXPECT_GE(memory_stats(0).peak - before, int64_t{256} << 20);
  reset_peak(0);
  EXPECT_LT(memory_stats(0).peak - before, int64_t{256} << 20);
}

TEST(Cuda, AGraphReplaysWhatItCapturedInPlace) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device on this machine";
  const OwnStream stream(0);
  at::Tensor x = torch::ones({16}, torch::kCUDA);
  at::Tensor y;
  Graph graph;
  {
    const SideStream side(stream);
    graph.capture([&] { y = x * 2 + 1; });
    x.fill_(5);
    graph.replay();
  }
  synchronize(0);
  EXPECT_TRUE(torch::equal(y.cpu(), torch::full({16}, 11.0F)));
}

}  // namespace
}  // namespace baton::cuda
