// SharedBatches: one data stream for several loaders (fused trials: the models of a search stepping
// on the same batches in one process, each in its own thread). Loaders over one data set with the
// same batch size, order and seed give the same batch at the same position, so each batch is read
// and prepared once, by the first loader to ask for it, and handed to the others as it is (the same
// tensors: algorithms replace a batch's tensors, never write into them). A batch is dropped once
// every attached loader has passed it; a loader more than `max_held` batches ahead of the slowest
// waits for it, so a fast model cannot fill memory with batches a slow one has yet to take.
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
  // Throws std::invalid_argument for max_held below 1.
  explicit SharedBatches(int64_t max_held = 16);
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
  // the lock; a loader that asks for a batch another is making waits for it). Blocks while this
  // loader would hold more than max_held batches ahead of the slowest. An exception from `make`
  // reaches this caller; the next one to ask makes the batch again.
  Batch take(int handle, int64_t epoch, int64_t index, const std::function<Batch()>& make);

  struct Stats {
    int64_t made = 0;         // batches made (read and prepared once each)
    int64_t taken = 0;        // batches handed to loaders
    double make_seconds = 0;  // wall seconds spent making them: the data pipeline's share
    int64_t most_held = 0;    // the most batches held at once
    int64_t waits = 0;        // times a loader waited for the slowest
  };
  Stats stats() const;

 private:
  using Key = std::pair<int64_t, int64_t>;  // (epoch, index)
  struct Entry {
    bool ready = false;
    Batch batch;
  };
  // Under mutex_: drops the batches every attached loader has passed; the slowest loader's position.
  void drop_passed();
  Key slowest() const;

  const int64_t max_held_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::string signature_;
  int next_handle_ = 0;
  std::map<int, Key> positions_;  // each attached loader's next batch
  std::map<Key, Entry> held_;
  Stats stats_;
};

}  // namespace baton
