// What the Trainer's MPI test programs (data_parallel_mpi_test.cpp, trainer_sharding_mpi_test.cpp)
// share: a trainer's weights, their differences, the spread over the ranks, a folder every rank uses.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "baton/io/file.h"
#include "baton/train/trainer.h"
#include "mpi/comm.h"

namespace baton::testing {

inline std::vector<at::Tensor> weights(Trainer& trainer) {
  std::vector<at::Tensor> out;
  for (const auto& p : trainer.state().model->parameters()) out.push_back(p.detach().clone());
  return out;
}

inline double max_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  return d;
}

// The largest difference between this rank's weights and rank 0's.
inline double spread_across_ranks(const std::vector<at::Tensor>& w) {
  auto& comm = mpi::Comm::world();
  double d = 0;
  for (const auto& t : w) {
    auto mine = t.contiguous().clone();
    auto root = mine.clone();
    comm.broadcast(root.data_ptr<float>(), static_cast<std::size_t>(root.numel()));
    d = std::max(d, (mine - root).abs().max().item<double>());
  }
  return d;
}

// Rank 0 names a fresh folder (`prefix`_`name`_pid under the temporary directory) and every rank uses it.
inline std::filesystem::path shared_dir(const std::string& prefix, const std::string& name) {
  auto& comm = mpi::Comm::world();
  std::string dir;
  if (comm.rank() == 0) {
    dir = (std::filesystem::temp_directory_path() / (prefix + "_" + name + "_" + std::to_string(::getpid()))).string();
    baton::remove_tree(dir);
  }
  return comm.broadcast(dir, 0);
}

}  // namespace baton::testing
