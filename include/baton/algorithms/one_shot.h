// Single-path one-shot training (SPOS, Guo et al. 2020): a supernet (nas/space.h,
// ModelSpace::one_shot; a recipe's model.one_shot: true) trained one sampled path per batch.
//
//   trainer_options.algorithms({std::make_shared<baton::SinglePath>(baton::SinglePathOptions().sampling(
//       baton::PathSampling::kFair))});
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "baton/core/algorithm.h"
#include "baton/core/options.h"

namespace baton {

// uniform: each choice's candidate drawn at random each batch; fair: FairNAS's strict fairness
// (each run of n batches takes each of a choice's n candidates once).
enum class PathSampling { kUniform, kFair };
BATON_ENUM_NAMES(PathSampling, {PathSampling::kUniform, "uniform"}, {PathSampling::kFair, "fair"})

class SinglePathOptions {
  BATON_ARG(PathSampling, sampling) = PathSampling::kUniform;
  // The paths are a function of (seed, batch) alone: a resumed run takes the same ones.
  BATON_ARG(uint64_t, seed) = 0;
};

// batch_start: the model's supernet takes the path of this batch (SupernetImpl::sample). The
// parameters off the path get no gradient (the optimizer leaves them as they are). A model with no
// supernet is refused at init.
class SinglePath : public Algorithm {
 public:
  explicit SinglePath(SinglePathOptions options = SinglePathOptions()) : options_(options) {}
  bool match(Event event, const State& state) override;
  std::optional<int> apply(Event event, State& state, Logger& logger) override;
  bool find_unused_parameters() const override { return true; }
  std::string graph_blocker(const State& state) override;
  std::string sharding_blocker(Sharding sharding) const override {
    return sharding == Sharding::kNone ? ""
                                       : "leaves the weights off the path as they are, but a rank steps every "
                                         "element of its shard";
  }

 private:
  SinglePathOptions options_;
};

}  // namespace baton
