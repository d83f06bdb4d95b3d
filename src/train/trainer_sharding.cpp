// Sharded data parallelism in the Trainer (TrainerOptions::sharding; docs/distributed.md,
// "Sharding"): the refusals, each optimizer's shards, and the gradients' reduction into them.
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "baton/train/trainer.h"
#include "mpi/comm.h"
#include "train/data_parallel.h"
#include "train/sharded_optimizer.h"
#include "train/trainer_impl.h"
#include "train/trainer_internal.h"

namespace baton {

using detail::require;

// After init (the algorithms are all there): what sharding cannot work with, refused by name.
void Trainer::Impl::check_sharding() {
  const Sharding sharding = options_.sharding();
  if (sharding == Sharding::kNone) return;
  const std::string level = "sharding: " + to_name(sharding);
  if (!ddp_) {
    spdlog::warn("{} does nothing in a single process: there are no ranks to shard over (start the run with "
                 "mpirun -n N; this one trains unsharded)",
                 level);
    return;
  }
  require(options_.precision() != Precision::kAmpFp16,
          "TrainerOptions: " + level +
              ": amp_fp16's loss scaler checks whole gradients; use precision amp_bf16 or fp32, or sharding: none");
  for (const auto& a : state_.algorithms) {
    const std::string why = a->sharding_blocker(sharding);
    require(why.empty(), "TrainerOptions: " + level + ": algorithm '" + a->name() + "' " + why +
                             "; remove it or set sharding: none");
  }
  state_.sharding = sharding;
}

// Each optimizer's state cut over the ranks, taking what a checkpoint loaded; with sharded
// gradients, what algorithms that scale gradients work on.
void Trainer::Impl::setup_sharding() {
  if (state_.sharding == Sharding::kNone) return;
  require(state_.sharding != Sharding::kFull,
          "TrainerOptions: sharding: full is not available yet; use optimizer or gradients");
  for (const auto& optimizer : state_.optimizers) {
    try {
      sharded_.push_back(std::make_unique<detail::ShardedOptimizer>(optimizer, mpi::Comm::world()));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("TrainerOptions: ") + e.what());
    }
  }
  if (sharded_gradients()) {
    state_.gradient_shards = [this] {
      std::vector<at::Tensor> all;
      for (const auto& s : sharded_) {
        for (auto& g : s->gradient_shards()) all.push_back(g);
      }
      return all;
    };
    state_.sum_over_ranks = [this](const at::Tensor& value) { return ddp_->allreduce(value); };
  }
  int64_t state_bytes = 0;
  for (const auto& s : sharded_) state_bytes += s->state_bytes();
  spdlog::info("sharding: {}: each of {} ranks holds 1/{} of the optimizer's state{}", to_name(state_.sharding),
               ddp_->size(), ddp_->size(), sharded_gradients() ? " and of the averaged gradients" : "");
}

bool Trainer::Impl::sharded_gradients() const {
  return state_.sharding == Sharding::kGradients || state_.sharding == Sharding::kFull;
}

void Trainer::Impl::reduce_gradients(double weight, bool find_unused) {
  if (sharded_gradients()) {
    for (const auto& s : sharded_) s->reduce_scatter_gradients(weight);
    return;
  }
  ddp_->arm(weight, find_unused);
  ddp_->finish();
}

}  // namespace baton
