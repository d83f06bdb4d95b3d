// FusedData: what fused trials (baton search --fuse K: up to K trials of one search training in one
// process, each on its own thread) share: the data sets of their recipe's data section, loaded once,
// and the training batches, read and prepared once for every trial (SharedBatches). A trial's
// recipe built with build_run(recipe, &fused) takes them from here.
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
  // What one data section gives: its sets, and the stream of its training batches.
  struct Sets {
    std::shared_ptr<Dataset> train;
    std::shared_ptr<Dataset> eval;                                              // null: none
    std::vector<std::pair<std::string, std::shared_ptr<Dataset>>> named_evals;  // the recipe's `eval:` sets
    std::shared_ptr<SharedBatches> batches;
  };

  // `max_held`: the batches a stream holds ahead of its slowest trial (SharedBatches).
  explicit FusedData(int64_t max_held = 16) : max_held_(max_held) {}

  // The sets of `key` (a data section as resolved, with what shapes its sets: the seed, the loss's
  // targets, the device), loaded by `load` for the first trial that asks (the others wait for it). A
  // load that throws keeps nothing: the next trial loads again, and fails the same way.
  Sets sets(const std::string& key, const std::function<Sets()>& load);
  // Every stream's batches: made, taken, the seconds spent making them (the data pipeline's share).
  SharedBatches::Stats stats() const;
  // Held while a trial builds its model and trainer: LibTorch has one random generator, which each
  // seeds, so that trials set up one at a time start exactly as each would alone.
  std::mutex& setup_mutex() { return setup_mutex_; }

 private:
  int64_t max_held_;
  mutable std::mutex mutex_;
  std::map<std::string, Sets> sets_;
  std::mutex setup_mutex_;
};

}  // namespace baton
