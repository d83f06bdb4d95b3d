// Thread settings for fast CPU training.
//
//   int threads = baton::configure_threads(0);  // every usable core for LibTorch, one for OpenBLAS
#pragma once

#include <string>

namespace baton {

// Sets LibTorch's intra-op threads to `num_threads` (0: every core this process may run on, its CPU
// affinity: taskset, a cpuset, a search's --threads-per-trial slot; LibTorch starts with one here)
// and holds OpenBLAS to one thread, so that its threads do not fight LibTorch's OpenMP threads
// (1.5x slower on this project's machines). Returns the number of LibTorch threads.
int configure_threads(int num_threads);

// The BLAS kernels LibTorch's matrix products use where it is OpenBLAS ("OpenBLAS SkylakeX"); empty
// for another BLAS (MKL in LibTorch's own builds). Where OpenBLAS does not know the processor by
// its model it would use its generic Prescott (SSE3) kernels: loading baton picks the kernels the
// processor's instruction sets allow instead (SkylakeX with AVX-512, Haswell with AVX2), unless
// OPENBLAS_CORETYPE is set (the user's choice stands).
std::string blas_kernels();

// Whether this processor computes bfloat16 natively (AVX512-BF16 or AMX-BF16): there, CPU
// autocast to bfloat16 is faster than float32; elsewhere it is slower.
bool cpu_has_native_bf16();

}  // namespace baton
