#include "baton/train/threads.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
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

}  // namespace

int configure_threads(int num_threads) {
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(1);
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
