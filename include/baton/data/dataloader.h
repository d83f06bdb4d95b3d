// DataLoader: batches from a Dataset, shuffled per epoch from a seed, prefetched on a thread.
//
//   baton::DataLoader loader(dataset, baton::DataLoaderOptions().batch_size(128).seed(17));
//   loader.start_epoch(0);
//   while (auto batch = loader.next()) train_on(*batch);
//
// Each batch is one index gather from the dataset's contiguous tensors (no per-example tensors
// stacked afterwards). The order of epoch e depends only on (seed, e), so a position
// (epoch, batch, seed) restores the loader in O(1): set_position() does not replay batches.
//
// On a GPU (set_device), the prefetch thread copies each batch from pinned memory on a side stream
// one batch ahead, and next() hands it to the current stream without the host waiting. A data set
// already on the device (TensorDataset::to) is gathered there, with no copy and no thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include "baton/core/options.h"
#include "baton/core/state.h"
#include "baton/data/dataset.h"

namespace baton {

class SharedBatches;

class DataLoaderOptions {
  // Examples per batch (the recipe's data.batch_size, whose default is this one).
  BATON_ARG(int64_t, batch_size) = 128;
  // A new order every epoch.
  BATON_ARG(bool, shuffle) = true;
  // Drop the last, short batch of an epoch.
  BATON_ARG(bool, drop_last) = false;
  // Seed of the shuffle.
  BATON_ARG(uint64_t, seed) = 0;
  // Build the next batch (and start its copy to the device) on a background thread while this
  // one is used, where that pays: a batch bound for another device than its data set's, or a data
  // set whose gather is work (Dataset::gather_is_cheap false). In memory and on its own device, a
  // batch is gathered in line (a hand-off to a thread costs ~12 us a batch on 2 cores:
  // bench/trainer_bench --host-time).
  BATON_ARG(bool, prefetch) = true;
  // At most this many batches an epoch (Lightning's limit_train_batches): the epoch ends there, its
  // order still drawn over every example. -1: every batch.
  BATON_ARG(int64_t, max_batches) = -1;
  // One data stream for several loaders (fused trials, shared_batches.h): each batch made once by
  // the first loader to ask, the others take it (no prefetch thread of their own, no shards).
  BATON_ARG(std::shared_ptr<SharedBatches>, shared_batches);
};

// Where a loader is: the next batch to hand out is `batch` of epoch `epoch`.
struct DataLoaderPosition {
  int64_t epoch = 0;
  int64_t batch = 0;
  uint64_t seed = 0;

  nlohmann::json to_json() const;
  // Throws std::invalid_argument naming a missing key.
  static DataLoaderPosition from_json(const nlohmann::json& j);
  bool operator==(const DataLoaderPosition&) const = default;
};

class DataLoader final : public BatchSource {
 public:
  // Throws std::invalid_argument for a null dataset or a batch size below 1.
  DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options = {});
  ~DataLoader() override;
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Batches in one epoch.
  int64_t num_batches() const override;
  int64_t num_samples() const;
  int64_t batch_size() const override;
  const std::shared_ptr<Dataset>& dataset() const;
  const DataLoaderOptions& options() const;

  // Begins epoch `epoch` at its first batch.
  void start_epoch(int64_t epoch) override;
  // The next batch of the current epoch, or nullopt at its end.
  std::optional<Batch> next() override;
  // A loader over the same data set and batch size, unshuffled, unsharded, not prefetched.
  std::unique_ptr<BatchSource> in_order(c10::Device device) const override;

  // Data parallelism: from now on each batch holds only this rank's share of the global batch (a
  // contiguous slice: rank r of w gets examples [len*r/w, len*(r+1)/w) of a batch of len). The
  // batch count, batch_size() and the order stay those of the whole loader. (0, 1): no sharding.
  // Throws std::invalid_argument unless 0 <= rank < world.
  void set_shard(int rank, int world);
  int shard_rank() const;
  int shard_world() const;
  // Examples in batch `index` of the epoch: all ranks' (global), and this rank's share.
  int64_t global_batch_samples(int64_t index) const;
  int64_t shard_batch_samples(int64_t index) const;

  // Batches go to `device` (their inputs and targets). Default: where the dataset is.
  void set_device(c10::Device device);
  c10::Device device() const;

  DataLoaderPosition position() const;
  // Leaves the shared data stream (DataLoaderOptions::shared_batches), whose other loaders then
  // stop waiting for this one (a trial that ended or stopped); later batches are its own.
  void leave_shared_batches();
  // O(1): recomputes the epoch's order from the seed and moves to the batch.
  // Throws std::invalid_argument for a batch past the end of the epoch.
  void set_position(const DataLoaderPosition& position);

 private:
  // A batch as the worker leaves it: gathered, its copy to the device started.
  struct Staged;
  Staged make_batch(int64_t index) const;
  bool prefetching() const;
  void worker_loop();
  void request(int64_t index);
  Batch take(int64_t index);
  // Waits for the worker to finish what it builds and drops it (before the order changes).
  void quiesce();
  void stop_worker();

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::pair<int64_t, int64_t> shard_range(int64_t index) const;  // [begin, end) in order_

  // The batch's signature in a shared stream, and this loader's handle there.
  std::string stream_signature() const;
  void rejoin_stream();
};

}  // namespace baton
