// Training state sharded over MPI ranks (ZeRO's three stages, FSDP; private to train). Each
// parameter group's parameters are flattened into chunks — one a group, or under full sharding one
// a unit (a transformer block) and group plus one for the parameters of no unit — padded to a
// multiple of the ranks and cut into one contiguous shard a rank. The parameters are views into
// their chunk's buffer. A rank's optimizer (the original's kind, its groups' options) steps its
// shards only and holds their state, 1/N of the whole.
//
// - optimizer (ZeRO-1): the averaged gradients are whole on every rank; a step takes this rank's
//   block of them, steps the shard in place, and gathers every rank's shard into the parameters.
// - gradients (ZeRO-2): after backward the gradients are reduce-scattered into the shards and the
//   whole ones freed.
// - full (ZeRO-3, FSDP): a unit's chunk is whole only around its forward and its backward (the
//   unit hooks gather it, then free the buffer's storage); its gradients are reduce-scattered into
//   the shard as soon as the unit's backward ends. The chunk of no unit stays whole (as gradients).
// The arithmetic of each element is the unsharded step's, so the weights are the same.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace baton {
class UnitHooks;
}
namespace baton::mpi {
class Comm;
}
namespace baton::cuda {
class Nccl;
}

namespace baton::detail {

class ShardedOptimizer {
 public:
  // `original` keeps its parameters and options (schedulers set its rates) and takes no step; the
  // state it holds now (a checkpoint's) moves into the shards. `units`: under full sharding, the
  // parameters of each unit, in the order the model's forward calls them (empty: no unit).
  // `offload`: the shards, their gradients and the optimizer's state live in host memory and the step
  // runs there (a GPU run's weights are copied back after it). `nccl` (may be null): the collectives
  // of parameters on its GPU run there, on its stream (else through MPI, a GPU's staged in host
  // memory). `compute`: what the units are gathered in for their passes (the run's precision:
  // bfloat16 under amp_bf16 moves half the bytes; the parameters stay float32 holding the rounded
  // values, the shards the exact ones). Throws std::invalid_argument for
  // parameters that are not float32 on one device, or an optimizer make_optimizer_like does not make.
  ShardedOptimizer(std::shared_ptr<torch::optim::Optimizer> original, mpi::Comm& comm, cuda::Nccl* nccl = nullptr,
                   const std::vector<std::vector<at::Tensor>>& units = {}, bool offload = false,
                   at::ScalarType compute = at::kFloat);
  ~ShardedOptimizer();
  ShardedOptimizer(const ShardedOptimizer&) = delete;
  ShardedOptimizer& operator=(const ShardedOptimizer&) = delete;

  // Under full sharding: what runs around unit `i`'s forward and backward (gathers, frees, reduces
  // its gradients with the weight set below). On a GPU with NCCL a unit's gather starts the next
  // one's (i + 1 in forward, i - 1 in backward), which runs while unit i computes.
  std::shared_ptr<UnitHooks> unit_hooks(std::size_t i);
  // This rank's share of the global batch: its gradients count with it.
  void set_gradient_weight(double weight);
  // The units' collectives of one microbatch, for a rank that has no examples left for it while the
  // others train one (every rank must take part in each): gathers, and zeros reduce-scattered.
  void idle_microbatch();
  // Full sharding between fits: the units' parameters whole and exact (gather_parameters: after a fit,
  // so the model can be read, saved, evaluated), or cut to this rank's shards and freed (shard_parameters:
  // at a fit's start, after rank 0's weights were broadcast). Collective.
  void gather_parameters();
  void shard_parameters();
  // Whether some unit's parameters are freed now (between shard_parameters and gather_parameters).
  bool parameters_sharded() const;

  // Sharded gradients (ZeRO-2, and full sharding's chunk of no unit): after backward, every rank's
  // gradients times the weight summed into the shards' owners, the parameters' own freed.
  // Collective.
  void reduce_scatter_gradients();
  // The gradients of this rank's shards after the reduction; what an algorithm that scales
  // gradients (clipping) works on.
  std::vector<at::Tensor> gradient_shards() const;
  // After the gradients are averaged (or reduce-scattered): this rank's shards step with the
  // original's current options, then every rank gathers every whole chunk's shards into the
  // parameters (a parameter without a gradient counts zeros, as data parallelism averages it).
  // Collective.
  void step();

  // The whole state (every rank's shards joined) into rank 0's original optimizer, for a checkpoint
  // in the one-file format, which rank 0 writes. Collective. release_gathered() empties the original
  // again.
  void gather_state();
  void release_gathered();
  // This rank's shards, a chunk each (save_format: sharded): its parameters (in order, flattened and
  // padded into `shard` elements a rank), this rank's block of their values, and of their state
  // tensors by name.
  struct ChunkState {
    std::vector<at::Tensor> params;
    int64_t shard = 0;
    at::Tensor weights;
    std::map<std::string, at::Tensor> state;
  };
  std::vector<ChunkState> shard_state() const;
  // A checkpoint's optimizer state, read a range at a time: `states(parameter)` names what it holds
  // for the named parameter (none: nothing), `read(parameter, state, start, n)` its elements [start,
  // start + n), flattened ("step": the count).
  struct StateSource {
    std::function<std::vector<std::string>(const std::string& param)> states;
    std::function<at::Tensor(const std::string& param, const std::string& state, int64_t start, int64_t n)> read;
  };
  // This rank's block of that state into the shards (after reshard(): it replaces what the original
  // held); `names`: each parameter's name. Reads nothing another rank holds.
  void load_state(const StateSource& source, const std::map<const void*, std::string>& names);
  // Every parameter the shards hold (whose values shard_state() gives).
  std::vector<at::Tensor> parameters() const;
  // After the parameters or the original's state changed (a checkpoint loaded; the parameters are
  // whole): the shards taken anew from them, and the original's state moved into the shards.
  void reshard();

  // The bytes of this rank's optimizer state, and of the parameters it holds now (whole chunks,
  // and the shards of freed ones).
  int64_t state_bytes() const;
  int64_t parameter_bytes() const;
  // Seconds the host waited for units' gathers through MPI (NCCL's are the device's: they count
  // nothing here).
  double wait_seconds() const;
  // Bytes the units' gathers received so far (every rank's blocks, padding included).
  int64_t gathered_bytes() const;
  // Elements of each chunk's shard (the padded length over the ranks).
  std::vector<int64_t> shard_sizes() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with the unit hooks
};

}  // namespace baton::detail
