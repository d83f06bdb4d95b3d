// Devices and precision as far as they can be checked without a GPU: names, errors, markers, and
// autocast guards that restore what they found.
#include "baton/core/device.h"

#include <chrono>
#include <thread>

#include <ATen/autocast_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/core/precision.h"
#include "common/test_util.h"

namespace baton {
namespace {

using ::testing::AnyOf;
using testing::error_of;
using ::testing::HasSubstr;

TEST(Device, NamesItParses) {
  EXPECT_EQ(parse_device("cpu"), c10::Device(c10::kCPU));
  const c10::Device automatic = parse_device("auto");
  if (cuda_device_count() == 0) {
    EXPECT_EQ(automatic, c10::Device(c10::kCPU));
  } else {
    EXPECT_EQ(automatic, c10::Device(c10::kCUDA, 0));
    EXPECT_EQ(parse_device("cuda"), c10::Device(c10::kCUDA, 0));
    EXPECT_EQ(parse_device("auto", /*local_rank=*/cuda_device_count()), c10::Device(c10::kCUDA, 0));
  }
}

TEST(Device, UnknownNamesAreOneLineErrorsThatNameThem) {
  for (const char* bad : {"tpu", "gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA", "", "cuda:123456"}) {
    const std::string why = error_of([&] { parse_device(bad); });
    EXPECT_THAT(why, HasSubstr(std::string("'") + bad + "': unknown device (expected auto, cpu, cuda or cuda:N)"));
    EXPECT_EQ(why.find('\n'), std::string::npos);
  }
}

TEST(Device, ACudaDeviceThisMachineLacksSaysWhy) {
  const int gpus = cuda_device_count();
  const std::string why = error_of([] { parse_device("cuda:7"); });
  EXPECT_THAT(why, HasSubstr("'cuda:7': "));
  if (!cuda_built()) {
    EXPECT_THAT(why, HasSubstr("this baton's LibTorch has no CUDA; use cpu (or auto)"));
    EXPECT_THAT(error_of([] { parse_device("cuda"); }), HasSubstr("'cuda': this baton's LibTorch has no CUDA"));
  } else if (gpus == 0) {
    EXPECT_THAT(why, HasSubstr("this machine has no CUDA device"));
  } else if (gpus < 8) {
    EXPECT_THAT(why, HasSubstr("this machine has " + std::to_string(gpus) + " CUDA device"));
  }
}

// Deterministic cuBLAS needs its workspace fixed before the first cuBLAS call; a CUDA build sets it
// when libbaton loads (so even a process that multiplied matrices first can train deterministically),
// and a value that cannot work is named.
TEST(Device, TheCublasWorkspaceIsFixedWhenBatonLoads) {
  EXPECT_EQ(cublas_workspace_problem(":4096:8"), "");
  EXPECT_EQ(cublas_workspace_problem(":16:8"), "");
  EXPECT_THAT(cublas_workspace_problem(":4096:2"), ::testing::HasSubstr("but it is ':4096:2'"));
  EXPECT_THAT(cublas_workspace_problem(nullptr), ::testing::HasSubstr("but it is unset"));
  if (cuda_built()) {
    EXPECT_EQ(cublas_workspace_problem(std::getenv("CUBLAS_WORKSPACE_CONFIG")), "");
  }
}

TEST(Device, TheCpuHasNoAllocatorMemoryAndNothingToWaitFor) {
  EXPECT_FALSE(device_memory(c10::Device(c10::kCPU)).has_value());
  synchronize(c10::Device(c10::kCPU));
  reset_peak_memory(c10::Device(c10::kCPU));
  EXPECT_EQ(describe(c10::Device(c10::kCPU)), "cpu");
  EXPECT_FALSE(cuda_supports_bf16(c10::Device(c10::kCPU)));
}

TEST(DeviceMarker, OnTheCpuIsTheHostClock) {
  const DeviceMarker start(c10::Device(c10::kCPU));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const DeviceMarker end(c10::Device(c10::kCPU));
  EXPECT_TRUE(start.done());
  EXPECT_TRUE(end.done());
  EXPECT_GE(end.seconds_since(start), 0.019);
  EXPECT_LT(end.seconds_since(start), 5.0);
}

// On the CPU a stream scope is nothing: work goes on as it would (the GPU's: tests/gpu).
TEST(OwnStreamScope, OnTheCpuIsNothing) {
  const OwnStreamScope scope(c10::Device(c10::kCPU));
  EXPECT_EQ(scope.stream_id(), 0);
  EXPECT_EQ((torch::ones({2}) + 1).sum().item<float>(), 4.0F);
}

TEST(Precision, ParsesItsThreeNames) {
  EXPECT_EQ(parse_precision("fp32"), Precision::kFp32);
  EXPECT_EQ(parse_precision("amp_bf16"), Precision::kAmpBf16);
  EXPECT_EQ(parse_precision("amp_fp16"), Precision::kAmpFp16);
  for (Precision p : {Precision::kFp32, Precision::kAmpBf16, Precision::kAmpFp16}) {
    EXPECT_EQ(parse_precision(to_string(p)), p);
  }
  EXPECT_THAT(error_of([] { parse_precision("fp8"); }),
              HasSubstr("unknown precision 'fp8': expected 'fp32', 'amp_bf16' or 'amp_fp16'"));
  EXPECT_EQ(compute_dtype(Precision::kAmpFp16), c10::ScalarType::Half);
  EXPECT_EQ(compute_dtype(Precision::kAmpBf16), c10::ScalarType::BFloat16);
}

TEST(AutocastGuard, TurnsCpuAutocastOnAndRestoresWhatItFound) {
  const at::Tensor a = torch::randn({4, 4});
  EXPECT_FALSE(autocast_enabled(c10::DeviceType::CPU));
  {
    AutocastGuard outer(Precision::kAmpBf16, c10::DeviceType::CPU);
    EXPECT_TRUE(autocast_enabled(c10::DeviceType::CPU));
    EXPECT_EQ(torch::mm(a, a).scalar_type(), at::kBFloat16);
    {
      AutocastGuard none(Precision::kFp32, c10::DeviceType::CPU);  // fp32 changes nothing
      EXPECT_TRUE(autocast_enabled(c10::DeviceType::CPU));
    }
    EXPECT_TRUE(autocast_enabled(c10::DeviceType::CPU));
  }
  EXPECT_FALSE(autocast_enabled(c10::DeviceType::CPU));
  EXPECT_EQ(torch::mm(a, a).scalar_type(), at::kFloat);
  // The CUDA settings are separate, and restored too (they need no GPU to be set).
  {
    AutocastGuard gpu(Precision::kAmpFp16, c10::DeviceType::CUDA);
    EXPECT_TRUE(autocast_enabled(c10::DeviceType::CUDA));
    EXPECT_EQ(autocast_dtype(c10::DeviceType::CUDA), c10::ScalarType::Half);
    EXPECT_FALSE(autocast_enabled(c10::DeviceType::CPU));
  }
  EXPECT_FALSE(autocast_enabled(c10::DeviceType::CUDA));
}

}  // namespace
}  // namespace baton
