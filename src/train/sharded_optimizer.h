// An optimizer's state sharded over MPI ranks (ZeRO's first two stages; private to train): each
// parameter group's parameters, flattened and padded to a multiple of the ranks, are cut into one
// contiguous shard a rank; a rank's optimizer (the original's kind, its groups' options) holds state
// for its shard only, 1/N of the whole, with an fp32 master copy of the shard's weights. A step takes
// the averaged gradients (whole on every rank, or reduce-scattered into the shards), steps this
// rank's shard, and gathers every rank's shard back into the parameters: the arithmetic of each
// element is the unsharded step's, so the weights are the same.
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
  // `original` keeps its parameters and options (schedulers set its rates) and takes no step; the
  // state it holds now (a checkpoint's) moves into the shards. Throws std::invalid_argument for
  // parameters that are not float32 or an optimizer make_optimizer_like does not make.
  ShardedOptimizer(std::shared_ptr<torch::optim::Optimizer> original, mpi::Comm& comm);
  ~ShardedOptimizer();
  ShardedOptimizer(const ShardedOptimizer&) = delete;
  ShardedOptimizer& operator=(const ShardedOptimizer&) = delete;

  // Sharded gradients (ZeRO-2): after backward, every rank's gradients times `weight` (its share of
  // the global batch) are summed into the shards' owners, and the parameters' own are freed.
  // Collective.
  void reduce_scatter_gradients(double weight);
  // The gradients of this rank's shards (one a parameter group) after reduce_scatter_gradients;
  // what an algorithm that scales gradients (clipping) works on.
  std::vector<at::Tensor> gradient_shards() const;
  // After the gradients are averaged (or reduce-scattered): this rank's shard steps with the
  // original's current options, then every rank gathers every shard into the parameters (a
  // parameter without a gradient counts zeros, as data parallelism averages it). Collective.
  void step();

  // The whole state (every rank's shards joined) into the original optimizer, for a checkpoint in
  // the one-file format. Collective. release_gathered() empties the original again.
  void gather_state();
  void release_gathered();
  // After the parameters or the original's state changed (a checkpoint loaded, rank 0's weights
  // broadcast): the shards taken anew from them, and the original's state moved into the shards.
  void reshard();

  // The bytes of this rank's optimizer state.
  int64_t state_bytes() const;
  // Elements of each group's shard (the padded length over the ranks).
  std::vector<int64_t> shard_sizes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::detail
