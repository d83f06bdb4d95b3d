// The collectives sharded training is made of (src/mpi/comm.cpp), under `mpirun -np 3` (label mpi):
// every rank gathers every rank's block (or one root does), and a reduce-scatter leaves each rank the sums of its
// block, exactly, for any block size (one element, one that is not a multiple of anything).
#include <vector>

#include <gtest/gtest.h>

#include "mpi/comm.h"

namespace baton::mpi {
namespace {

// Rank r's value i: distinct over every rank and index, exact in float.
float value(int rank, std::size_t i) { return static_cast<float>(rank * 1000) + static_cast<float>(i) * 0.5f; }

TEST(Collectives, AllgatherPutsEveryRanksBlockInRankOrder) {
  Comm& comm = Comm::world();
  ASSERT_GE(comm.size(), 2) << "run under mpirun -np 3";
  for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    std::vector<float> mine(n), all(n * static_cast<std::size_t>(comm.size()), -1.0f);
    for (std::size_t i = 0; i < n; ++i) mine[i] = value(comm.rank(), i);
    comm.allgather(mine.data(), all.data(), n);
    for (int r = 0; r < comm.size(); ++r) {
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(all[static_cast<std::size_t>(r) * n + i], value(r, i)) << n;
    }
  }
}

// A gather to one root: the root has every block in rank order; the others' buffers are untouched.
TEST(Collectives, AGatherPutsEveryRanksBlockOnTheRootOnly) {
  Comm& comm = Comm::world();
  for (const int root : {0, comm.size() - 1}) {
    const std::size_t n = 7;
    std::vector<float> mine(n), all(n * static_cast<std::size_t>(comm.size()), -1.0f);
    for (std::size_t i = 0; i < n; ++i) mine[i] = value(comm.rank(), i);
    comm.gather(mine.data(), all.data(), n, root);
    for (int r = 0; r < comm.size(); ++r) {
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(all[static_cast<std::size_t>(r) * n + i], comm.rank() == root ? value(r, i) : -1.0f) << root;
      }
    }
  }
}

TEST(Collectives, AReduceScatterLeavesEachRankTheSumsOfItsBlock) {
  Comm& comm = Comm::world();
  const auto size = static_cast<std::size_t>(comm.size());
  for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    std::vector<float> in(n * size), out(n, -1.0f);
    for (std::size_t j = 0; j < in.size(); ++j) in[j] = value(comm.rank(), j);
    comm.reduce_scatter_sum(in.data(), out.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t j = static_cast<std::size_t>(comm.rank()) * n + i;
      float sum = 0.0f;
      for (int r = 0; r < comm.size(); ++r) sum += value(r, j);
      ASSERT_EQ(out[i], sum) << n;
    }
  }
}

}  // namespace
}  // namespace baton::mpi
