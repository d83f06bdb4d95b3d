#include "baton/train/threads.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <torch/torch.h>

namespace baton {

namespace {

// The cores this process may run on: its CPU affinity (taskset, a cgroup's cpuset, a search's
// --threads-per-trial slot), else every core.
int usable_cores() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// A symbol of the libraries loaded (the whole process's scope: dlsym(RTLD_DEFAULT) reads its
// caller's, which is the loader's own while the library is loaded).
void* loaded_symbol(const char* name) {
  static void* const process = dlopen(nullptr, RTLD_LAZY);
  return process != nullptr ? dlsym(process, name) : nullptr;
}

// OpenBLAS (Debian's, built for every x86 core it knows) reads the processor's family and model to
// pick its kernels; a processor it does not know by model (a virtual machine's "Intel Xeon
// Processor" with AVX-512) gets its Prescott kernels, SSE3 from 2004: a fully connected layer's
// matrix products 1.2x slower for a whole small CNN on one thread. Unless OPENBLAS_CORETYPE says
// which, the kernels the processor's instruction sets allow are chosen instead, the way OpenBLAS
// itself does when it reads a core type from the environment. It runs once, while the library is
// loaded, before any product (a switch during one would pull its kernels from under it).
const char* better_blas_core() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return nullptr;  // the user's choice
  using CoreName = char* (*)();
  auto core_name = reinterpret_cast<CoreName>(loaded_symbol("openblas_get_corename"));
  if (core_name == nullptr || std::strcmp(core_name(), "Prescott") != 0) return nullptr;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && loaded_symbol("gotoblas_SKYLAKEX") != nullptr)
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && loaded_symbol("gotoblas_HASWELL") != nullptr)
    return "Haswell";
#endif
  return nullptr;
}

void choose_blas_core() {
  const char* core = better_blas_core();
  if (core == nullptr) return;
  using Call = void (*)();
  auto quit = reinterpret_cast<Call>(loaded_symbol("gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Call>(loaded_symbol("gotoblas_dynamic_init"));
  if (quit == nullptr || init == nullptr) return;
  ::setenv("OPENBLAS_CORETYPE", core, 1);  // what gotoblas_dynamic_init reads; not left to child processes
  quit();
  init();
  ::unsetenv("OPENBLAS_CORETYPE");
}

// NOLINTNEXTLINE(cert-err58-cpp): choose_blas_core throws nothing
[[maybe_unused]] const bool blas_core_chosen = (choose_blas_core(), true);

}  // namespace

std::string blas_kernels() {
  using CoreName = char* (*)();
  auto core_name = reinterpret_cast<CoreName>(loaded_symbol("openblas_get_corename"));
  return core_name != nullptr ? "OpenBLAS " + std::string(core_name()) : std::string();
}

int configure_threads(int num_threads) {
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(loaded_symbol("openblas_set_num_threads"))) set(1);
  const int threads = num_threads > 0 ? num_threads : usable_cores();
  at::set_num_threads(threads);
  return threads;
}

bool cpu_has_native_bf16() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5))) return true;   // AVX512_BF16
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & (1u << 22))) return true;  // AMX_BF16
#endif
  return false;
}

}  // namespace baton
