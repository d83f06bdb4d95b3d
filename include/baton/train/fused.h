// FusedData: what fused trials (baton search --fuse K: up to K trials of one search training in one
// process, each on its own thread) share: the data sets of their recipe's data section, loaded once,
// and their batches, read and prepared once for every trial (SharedBatches): the training batches,
// and the evaluation sets' batches at each evaluation. A trial's recipe built with
// build_run(recipe, &fused) takes them from here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "baton/data/dataset.h"
#include "baton/data/shared_batches.h"

namespace baton {

class FusedData {
 public:
  ~FusedData();
  // The streams of batches of one data section's sets: the training set's, and the evaluation
  // sets' (SharedBatches::Kind::kEvaluation: made once for every evaluation of every trial).
  struct Streams {
    std::shared_ptr<SharedBatches> train;
    std::shared_ptr<SharedBatches> eval;                      // null: no evaluation set
    std::vector<std::shared_ptr<SharedBatches>> named_evals;  // the `eval:` sets', in order
  };
  // What one data section gives: its sets, and the streams of their batches.
  struct Sets {
    std::shared_ptr<Dataset> train;
    std::shared_ptr<Dataset> eval;                                              // null: none
    std::vector<std::pair<std::string, std::shared_ptr<Dataset>>> named_evals;  // the recipe's `eval:` sets
    Streams streams;
  };

  // `max_held_bytes`: what a stream's batches may take ahead of its slowest trial (SharedBatches).
  explicit FusedData(int64_t max_held_bytes = int64_t{256} << 20);

  // The sets of `key` (a data section as resolved, with what shapes its sets: the seed, the loss's
  // targets, the device), loaded by `load` for the first trial that asks (the others wait for it). A
  // load that throws keeps nothing: the next trial loads again, and fails the same way.
  Sets sets(const std::string& key, const std::function<Sets()>& load);
  // The training streams' batches: made, taken, the seconds spent making them (the data pipeline's
  // share); and the evaluation streams'.
  SharedBatches::Stats stats() const;
  SharedBatches::Stats eval_stats() const;
  // Held while a trial builds its model and trainer: LibTorch has one random generator, which each
  // seeds, so that trials set up one at a time start exactly as each would alone.
  std::mutex& setup_mutex();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
