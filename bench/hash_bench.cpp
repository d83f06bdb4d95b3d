// Checkpoint fingerprint speed: SHA-256 over a large buffer (the bytes of a big model's weights)
// through baton's sha256_hex, as `baton checkpoint` computes weights_sha256. Prints one JSON line.
//
//   build/bin/hash_bench [--mib 256] [--reps 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "baton/train/checkpoint.h"

int main(int argc, char** argv) {
  long mib = 256;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mib") == 0)
      mib = std::atol(argv[i + 1]);
    else if (std::strcmp(argv[i], "--reps") == 0)
      reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "hash_bench: unknown option %s (known: --mib N, --reps N)\n", argv[i]);
      return 2;
    }
  }
  if (mib <= 0 || reps <= 0) {
    std::fprintf(stderr, "hash_bench: --mib and --reps must be positive\n");
    return 2;
  }
  std::string bytes(static_cast<std::size_t>(mib) << 20, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  double best = 1e30;
  std::string digest;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    digest = baton::sha256_hex(bytes);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::printf("{\"bench\": \"sha256\", \"mib\": %ld, \"best_s\": %.4f, \"mib_per_s\": %.1f, \"digest\": \"%s\"}\n", mib,
              best, static_cast<double>(mib) / best, digest.c_str());
}
