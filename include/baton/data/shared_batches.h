// SharedBatches: one data stream for several loaders (fused trials: the models of a search stepping
// on the same batches in one process, each in its own thread). Loaders over one data set with the
// same batch size, order and seed give the same batch at the same position, so each batch is read
// and prepared once, by the first loader to ask for it, and handed to the others as it is (the same
// tensors: algorithms replace a batch's tensors, never write into them). A batch is dropped once
// every attached loader has passed it; a loader ahead of the slowest while the batches held take
// `max_held_bytes` waits for it, so a fast model cannot fill memory with batches a slow one has yet
// to take. The bound is in bytes, not batches: small batches (a search's small models on small
// images) are held by the hundred, and the trials rarely wait in lockstep for the slowest. An
// evaluation set's stream (Kind::kEvaluation) keeps its batches for every evaluation instead.
//
//   auto shared = std::make_shared<baton::SharedBatches>();
//   baton::DataLoader a(data, baton::DataLoaderOptions().batch_size(128).shared_batches(shared));
//   baton::DataLoader b(data, baton::DataLoaderOptions().batch_size(128).shared_batches(shared));
//   // a and b, in two threads: each batch is gathered once; shared->stats() says how long that took.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "baton/core/batch_source.h"

namespace baton {

class SharedBatches {
 public:
  ~SharedBatches();
  // kTraining: the loaders go through the epochs once; a batch is dropped once every loader passed
  // it, and a loader ahead of the slowest while the batches held take max_held_bytes waits for it.
  // kEvaluation: the loaders read the same batches at every evaluation (an evaluation set's, in
  // order), at points of their own: a batch made is kept for every later evaluation of every loader
  // while the batches held take less than max_held_bytes; past that a loader makes its batch alone
  // and holds nothing more. Nobody waits (one that waited in an evaluation for a trial that waits in
  // training for it would wait for ever).
  enum class Kind { kTraining, kEvaluation };
  // Throws std::invalid_argument for max_held_bytes below 1.
  explicit SharedBatches(int64_t max_held_bytes = int64_t{256} << 20, Kind kind = Kind::kTraining);
  SharedBatches(const SharedBatches&) = delete;
  SharedBatches& operator=(const SharedBatches&) = delete;

  // A loader joins the stream; `signature` says what its batches are (data set, batch size, order,
  // seed: DataLoader writes it), and must equal the first loader's. Returns the loader's handle.
  // Throws std::invalid_argument naming both signatures when they differ.
  int attach(const std::string& signature);
  // The loader leaves: the batches only it had yet to take are dropped, and the loaders waiting on
  // it go on.
  void detach(int handle);
  // Batch `index` of epoch `epoch` for `handle`: the one held, or else made by `make` here (outside
  // the lock; a loader that asks for a batch another is making waits for it). A training stream's
  // blocks while this loader is ahead of the slowest and the batches held take max_held_bytes. An
  // exception from `make` reaches this caller; the next one to ask makes the batch again.
  Batch take(int handle, int64_t epoch, int64_t index, const std::function<Batch()>& make);

  struct Stats {
    int64_t made = 0;         // batches made (read and prepared once each)
    int64_t taken = 0;        // batches handed to loaders
    double make_seconds = 0;  // wall seconds spent making them: the data pipeline's share
    int64_t most_held = 0;    // the most batches held at once
    int64_t most_held_bytes = 0;
    int64_t waits = 0;       // times a loader waited for the slowest
    int64_t made_alone = 0;  // batches made by a loader for itself alone (kEvaluation, past the bound)
  };
  Stats stats() const;

 private:
  using Key = std::pair<int64_t, int64_t>;  // (epoch, index)
  struct Entry {
    bool ready = false;
    Batch batch;
    int64_t bytes = 0;
  };
  // Under mutex_: drops the batches every attached loader has passed; the slowest loader's position.
  void drop_passed();
  Key slowest() const;

  // Under `lock`: batch `key` made by `make` (outside the lock) and held, ready; returns it, locked.
  Batch make_held(std::unique_lock<std::mutex>& lock, const Key& key, const std::function<Batch()>& make);
  // An evaluation stream's take.
  Batch take_kept(const Key& key, const std::function<Batch()>& make);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
