// How much of the training state sharded data parallelism cuts over the ranks (docs/distributed.md,
// "Sharding"): kNone keeps everything whole on every rank (data parallelism, as PyTorch DDP);
// kOptimizer shards the optimizer's state (ZeRO-1); kGradients the gradients too (ZeRO-2); kFull
// the parameters too (ZeRO-3, FSDP).
#pragma once

#include "baton/core/options.h"

namespace baton {

enum class Sharding { kNone, kOptimizer, kGradients, kFull };
BATON_ENUM_NAMES(Sharding, {Sharding::kNone, "none"}, {Sharding::kOptimizer, "optimizer"},
                 {Sharding::kGradients, "gradients"}, {Sharding::kFull, "full"})

}  // namespace baton
