// NCCL for data parallelism on GPUs (src/cuda/nccl.cpp): an identity of the wrong size refused
// before any device is touched, a build without NCCL saying how to get it, and on a GPU a one-rank
// reduction that leaves the tensor as it was. Several ranks: tests/gpu/ (the GPU kit).
#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "cuda/cuda.h"

namespace baton::cuda {
namespace {

using ::testing::HasSubstr;

TEST(Nccl, AnIdentityOfTheWrongSizeOrABuildWithoutNcclIsSaid) {
  if (!built()) GTEST_SKIP() << "this LibTorch has no CUDA (none_test.cpp covers it)";
  if (nccl_built()) {
    EXPECT_THAT([] { Nccl("too short", 0, 1, 0); },
                ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("NCCL: a unique id of the wrong size")));
  } else {
    EXPECT_THAT([] { nccl_unique_id(); },
                ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("built without NCCL (no nccl.h was found")));
    EXPECT_THAT([] { Nccl("id", 0, 1, 0); }, ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("without NCCL")));
  }
}

TEST(Nccl, OneRanksSumIsTheTensorItself) {
  if (!nccl_built() || device_count() == 0) GTEST_SKIP() << "no GPU with NCCL here";
  Nccl nccl(nccl_unique_id(), 0, 1, 0);
  const at::Tensor x = torch::arange(1000, torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA));
  at::Tensor y = x.clone();
  nccl.allreduce_sum(y);
  nccl.wait();
  EXPECT_TRUE(torch::equal(x.cpu(), y.cpu()));
}

}  // namespace
}  // namespace baton::cuda
