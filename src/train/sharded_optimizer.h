// An optimizer's state sharded over MPI ranks (ZeRO's first stage; private to train): each
// parameter group's parameters, flattened and padded to a multiple of the ranks, are cut into one
// contiguous shard a rank; a rank's optimizer (the original's kind, its groups' options) holds state
// for its shard only, 1/N of the whole. A step takes the averaged gradients (whole on every rank),
// steps this rank's shard, and gathers every rank's shard back into the parameters: the arithmetic
// of each element is the unsharded step's, so the weights are the same.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

namespace baton::mpi {
class Comm;
}

namespace baton::detail {

class ShardedOptimizer {
 public:
  // `original` keeps its parameters and options (schedulers set its rates) and takes no step.
  // Throws std::invalid_argument for parameters that are not float32 or an optimizer
  // make_optimizer_like does not make.
  ShardedOptimizer(std::shared_ptr<torch::optim::Optimizer> original, mpi::Comm& comm);
  ~ShardedOptimizer();
  ShardedOptimizer(const ShardedOptimizer&) = delete;
  ShardedOptimizer& operator=(const ShardedOptimizer&) = delete;

  // After the gradients are averaged: this rank's shard steps with the original's current options,
  // then every rank gathers every shard into the parameters (a parameter without a gradient counts
  // zeros, as data parallelism averages it). Collective.
  void step();
  // The bytes of this rank's optimizer state.
  int64_t state_bytes() const;
  // Elements of each group's shard (the padded length over the ranks).
  std::vector<int64_t> shard_sizes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::detail
