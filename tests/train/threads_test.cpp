// Threads and BLAS kernels (src/train/threads.cpp): the processor's instruction sets choose them
// unless the user did.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <caffe2/serialize/inline_container.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/core/device.h"
#include "baton/train/checkpoint.h"
#include "baton/train/threads.h"
#include "baton/train/trainer.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton {
namespace {

using ::testing::AnyOf;
using testing::error_of;
using ::testing::HasSubstr;
using testing::small_options;

// Run by the test below in a process of its own, with the environment it gives.
TEST(BlasKernels, DISABLED_SaysWhichAndWhetherTheEnvironmentNamesThem) {
  std::printf("kernels: %s; OPENBLAS_CORETYPE %s\n", blas_kernels().c_str(),
              std::getenv("OPENBLAS_CORETYPE") != nullptr ? "set" : "unset");
}

std::string run_test_binary_with(const std::string& environment) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command = environment + " '" + self +
                              "' --gtest_also_run_disabled_tests "
                              "--gtest_filter=BlasKernels.DISABLED_SaysWhichAndWhetherTheEnvironmentNamesThem 2>&1";
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
    ::pclose(pipe);
  }
  return out;
}

// OpenBLAS takes a processor it does not know by its model (a virtual machine's) for a 2004 one;
// loading baton gives it the kernels the processor's instruction sets allow, leaves no
// OPENBLAS_CORETYPE behind for child processes, and a user's OPENBLAS_CORETYPE stands.
TEST(BlasKernels, TheProcessorsInstructionSetsChooseThemUnlessTheUserDid) {
  if (blas_kernels().empty()) GTEST_SKIP() << "LibTorch's BLAS here is not OpenBLAS";
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const std::string chosen = run_test_binary_with("env -u OPENBLAS_CORETYPE");
  EXPECT_THAT(chosen, HasSubstr("kernels: OpenBLAS ")) << chosen;
  EXPECT_THAT(chosen, HasSubstr("OPENBLAS_CORETYPE unset")) << chosen;
  if (avx2) {
    EXPECT_THAT(chosen, ::testing::Not(HasSubstr("Prescott"))) << chosen;
  }
  const std::string users = run_test_binary_with("OPENBLAS_CORETYPE=Prescott");
  EXPECT_THAT(users, HasSubstr("kernels: OpenBLAS Prescott; OPENBLAS_CORETYPE set")) << users;
}

}  // namespace
}  // namespace baton
