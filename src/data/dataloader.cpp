#include "baton/data/dataloader.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <utility>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "baton/data/shared_batches.h"
#include "cuda/cuda.h"

namespace baton {

struct DataLoader::Impl {
  std::shared_ptr<Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
  int64_t next_batch_ = 0;
  at::Tensor order_;  // the epoch's permutation of example indices, where the dataset is
  c10::Device device_ = c10::Device(c10::kCPU);
  int shard_rank_ = 0;
  int shard_world_ = 1;
  // One-slot prefetch.
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int64_t requested_ = -1;  // batch index the worker should build
  bool busy_ = false;       // the worker is building a batch
  int64_t ready_index_ = -1;
  std::unique_ptr<Staged> ready_;
  std::exception_ptr error_;
  int stream_handle_ = -1;
};

int64_t DataLoader::batch_size() const { return impl_->options_.batch_size(); }
const std::shared_ptr<Dataset>& DataLoader::dataset() const { return impl_->dataset_; }
const DataLoaderOptions& DataLoader::options() const { return impl_->options_; }
int DataLoader::shard_rank() const { return impl_->shard_rank_; }
int DataLoader::shard_world() const { return impl_->shard_world_; }
c10::Device DataLoader::device() const { return impl_->device_; }

struct DataLoader::Staged {
  Batch batch;
  std::optional<cuda::Transfer> transfer;  // the batch on its way to a GPU

  Batch finish() {
    if (!transfer) return std::move(batch);
    std::vector<at::Tensor> t = transfer->take();
    return {t[0], t[1]};
  }
};

namespace {

// Mixes seed and epoch into one well-spread generator seed (splitmix64's finaliser).
uint64_t epoch_seed(uint64_t seed, int64_t epoch) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(epoch + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

nlohmann::json DataLoaderPosition::to_json() const { return {{"epoch", epoch}, {"batch", batch}, {"seed", seed}}; }

DataLoaderPosition DataLoaderPosition::from_json(const nlohmann::json& j) {
  DataLoaderPosition p;
  for (const char* key : {"epoch", "batch", "seed"}) {
    if (!j.contains(key) || !j[key].is_number_integer()) {
      throw std::invalid_argument(std::string("dataloader position: key '") + key + "' is missing or not an integer");
    }
  }
  p.epoch = j["epoch"].get<int64_t>();
  p.batch = j["batch"].get<int64_t>();
  p.seed = j["seed"].get<uint64_t>();
  return p;
}

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->dataset_ = std::move(dataset);
  impl_->options_ = options;
  if (!impl_->dataset_) throw std::invalid_argument("DataLoader: the dataset is null");
  if (impl_->options_.max_batches() < -1) {
    throw std::invalid_argument("DataLoader: max_batches must be a number of batches, or -1 for every batch");
  }
  if (impl_->options_.batch_size() < 1) {
    throw std::invalid_argument("DataLoader: batch_size must be at least 1, got " +
                                std::to_string(impl_->options_.batch_size()));
  }
  impl_->device_ = impl_->dataset_->device();
  if (impl_->options_.shared_batches())
    impl_->stream_handle_ = impl_->options_.shared_batches()->attach(stream_signature());
  start_epoch(0);
}

std::string DataLoader::stream_signature() const {
  char address[32];
  std::snprintf(address, sizeof address, "%p", static_cast<const void*>(impl_->dataset_.get()));
  return "data set " + std::string(address) + " (" + std::to_string(impl_->dataset_->size()) +
         " examples) in batches of " + std::to_string(impl_->options_.batch_size()) +
         (impl_->options_.shuffle() ? ", shuffled" : ", in order") + ", seed " +
         std::to_string(impl_->options_.seed()) + (impl_->options_.drop_last() ? ", drop_last" : "") + ", at most " +
         std::to_string(impl_->options_.max_batches()) + " an epoch";
}

// What the loader's batches are changed (their device, the seed of their order): it joins its
// stream again, which refuses it when the other loaders' batches differ.
void DataLoader::rejoin_stream() {
  if (impl_->stream_handle_ < 0) return;
  impl_->options_.shared_batches()->detach(std::exchange(impl_->stream_handle_, -1));
  impl_->stream_handle_ = impl_->options_.shared_batches()->attach(stream_signature());
}

void DataLoader::leave_shared_batches() {
  if (impl_->stream_handle_ < 0) return;
  impl_->options_.shared_batches()->detach(std::exchange(impl_->stream_handle_, -1));
}

// A data set on a device is gathered there asynchronously: nothing for a thread to do ahead. Rows
// in memory that stay on the CPU are copied in line (cheaper than the hand-off).
bool DataLoader::prefetching() const {
  return impl_->options_.prefetch() && impl_->stream_handle_ < 0 && impl_->dataset_->device().is_cpu() &&
         (!impl_->dataset_->gather_is_cheap() || impl_->device_ != impl_->dataset_->device());
}

DataLoader::~DataLoader() {
  stop_worker();
  leave_shared_batches();
}

void DataLoader::stop_worker() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    impl_->stopping_ = true;
  }
  impl_->cv_.notify_all();
  if (impl_->worker_.joinable()) impl_->worker_.join();
}

int64_t DataLoader::num_samples() const { return impl_->dataset_->size(); }

int64_t DataLoader::num_batches() const {
  const int64_t n = impl_->dataset_->size();
  const int64_t bs = impl_->options_.batch_size();
  const int64_t all = impl_->options_.drop_last() ? n / bs : (n + bs - 1) / bs;
  return impl_->options_.max_batches() >= 0 ? std::min(all, impl_->options_.max_batches()) : all;
}

void DataLoader::quiesce() {
  std::unique_lock<std::mutex> lock(impl_->mutex_);
  impl_->cv_.wait(lock, [&] { return !impl_->busy_ && impl_->requested_ < 0; });
  impl_->ready_.reset();
  impl_->ready_index_ = -1;
  impl_->error_ = nullptr;
}

void DataLoader::start_epoch(int64_t epoch) {
  quiesce();
  impl_->epoch_ = epoch;
  impl_->next_batch_ = 0;
  const int64_t n = impl_->dataset_->size();
  impl_->order_ = impl_->dataset_->epoch_order(epoch, impl_->options_.seed(), impl_->options_.shuffle());
  if (impl_->order_.defined()) {
    if (impl_->order_.numel() != n) throw std::logic_error("Dataset::epoch_order: not one index an example");
  } else if (impl_->options_.shuffle()) {
    auto generator = at::detail::createCPUGenerator(epoch_seed(impl_->options_.seed(), epoch));
    impl_->order_ = torch::randperm(n, generator, torch::TensorOptions().dtype(torch::kLong));
  } else {
    impl_->order_ = torch::arange(n, torch::TensorOptions().dtype(torch::kLong));
  }
  // The same order on every device (drawn on the CPU), gathered where the examples are.
  if (!impl_->dataset_->device().is_cpu())
    impl_->order_ = impl_->order_.to(impl_->dataset_->device(), /*non_blocking=*/true);
  if (prefetching() && num_batches() > 0) request(0);
}

std::pair<int64_t, int64_t> DataLoader::shard_range(int64_t index) const {
  const int64_t start = index * impl_->options_.batch_size();
  const int64_t len = std::min(start + impl_->options_.batch_size(), impl_->dataset_->size()) - start;
  return {start + len * impl_->shard_rank_ / impl_->shard_world_,
          start + len * (impl_->shard_rank_ + 1) / impl_->shard_world_};
}

int64_t DataLoader::global_batch_samples(int64_t index) const {
  const int64_t start = index * impl_->options_.batch_size();
  return std::max<int64_t>(0, std::min(start + impl_->options_.batch_size(), impl_->dataset_->size()) - start);
}

int64_t DataLoader::shard_batch_samples(int64_t index) const {
  const auto [begin, end] = shard_range(index);
  return std::max<int64_t>(0, end - begin);
}

void DataLoader::set_shard(int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world) {
    throw std::invalid_argument("DataLoader::set_shard: rank " + std::to_string(rank) + " of " + std::to_string(world) +
                                " (want 0 <= rank < world)");
  }
  if (impl_->stream_handle_ >= 0 && world > 1) {
    throw std::invalid_argument(
        "DataLoader::set_shard: a loader that shares its batches (fused trials) is not sharded");
  }
  quiesce();
  impl_->shard_rank_ = rank;
  impl_->shard_world_ = world;
  if (prefetching() && impl_->next_batch_ < num_batches()) request(impl_->next_batch_);
}

void DataLoader::set_device(c10::Device device) {
  quiesce();
  impl_->device_ = device;
  if (prefetching() && impl_->next_batch_ < num_batches()) request(impl_->next_batch_);
}

std::unique_ptr<BatchSource> DataLoader::in_order(c10::Device device) const {
  auto pass = std::make_unique<DataLoader>(impl_->dataset_,
                                           DataLoaderOptions().batch_size(batch_size()).shuffle(false).prefetch(false));
  pass->set_device(device);
  return pass;
}

DataLoader::Staged DataLoader::make_batch(int64_t index) const {
  const auto [begin, end] = shard_range(index);
  Staged staged{impl_->dataset_->get_epoch_batch(impl_->order_.slice(0, begin, end), impl_->epoch_), std::nullopt};
  Batch& b = staged.batch;
  if (b.input.device() == impl_->device_) return staged;
  if (impl_->device_.is_cuda()) {
    staged.transfer.emplace(std::vector<at::Tensor>{b.input, b.target}, impl_->device_.index());
    b = Batch{};
  } else {
    b = {b.input.to(impl_->device_), b.target.defined() ? b.target.to(impl_->device_) : b.target};
  }
  return staged;
}

void DataLoader::request(int64_t index) {
  if (!impl_->worker_.joinable()) impl_->worker_ = std::thread([this] { worker_loop(); });  // the first prefetch
  {
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    impl_->requested_ = index;
  }
  impl_->cv_.notify_all();
}

void DataLoader::worker_loop() {
  std::unique_lock<std::mutex> lock(impl_->mutex_);
  while (true) {
    impl_->cv_.wait(lock, [&] { return impl_->stopping_ || impl_->requested_ >= 0; });
    if (impl_->stopping_) return;
    const int64_t index = impl_->requested_;
    impl_->requested_ = -1;
    impl_->busy_ = true;
    lock.unlock();
    std::unique_ptr<Staged> batch;
    std::exception_ptr error;
    try {
      batch = std::make_unique<Staged>(make_batch(index));
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    impl_->busy_ = false;
    impl_->ready_ = std::move(batch);
    impl_->ready_index_ = index;
    impl_->error_ = error;
    impl_->cv_.notify_all();
  }
}

Batch DataLoader::take(int64_t index) {
  std::unique_lock<std::mutex> lock(impl_->mutex_);
  impl_->cv_.wait(lock, [&] { return !impl_->busy_ && impl_->requested_ < 0; });
  if (impl_->ready_index_ == index) {
    impl_->ready_index_ = -1;
    if (impl_->error_) std::rethrow_exception(std::exchange(impl_->error_, nullptr));
    std::unique_ptr<Staged> staged = std::move(impl_->ready_);
    lock.unlock();
    return staged->finish();
  }
  lock.unlock();
  return make_batch(index).finish();
}

std::optional<Batch> DataLoader::next() {
  if (impl_->next_batch_ >= num_batches()) return std::nullopt;
  const int64_t index = impl_->next_batch_++;
  if (impl_->stream_handle_ >= 0) {  // gathered (read, decoded, augmented) once, where the examples are
    Batch batch = impl_->options_.shared_batches()->take(impl_->stream_handle_, impl_->epoch_, index, [&] {
      const auto [begin, end] = shard_range(index);
      Batch made = impl_->dataset_->get_epoch_batch(impl_->order_.slice(0, begin, end), impl_->epoch_);
      // Gathered on a GPU on this thread's stream, read on the other loaders' (OwnStreamScope).
      if (made.input.defined() && made.input.is_cuda()) cuda::synchronize_stream(made.input.device().index());
      return made;
    });
    for (const at::Tensor& t : {batch.input, batch.target}) {
      if (t.defined() && t.is_cuda()) cuda::use_on_current_stream(t);
    }
    if (batch.input.defined() && batch.input.device() != impl_->device_) {
      batch = {batch.input.to(impl_->device_), batch.target.defined() ? batch.target.to(impl_->device_) : batch.target};
    }
    if (batch.input.defined()) batch.input = impl_->dataset_->finish_inputs(batch.input);
    return batch;
  }
  Batch batch = prefetching() ? take(index) : make_batch(index).finish();
  if (prefetching() && impl_->next_batch_ < num_batches()) request(impl_->next_batch_);
  if (batch.input.defined()) batch.input = impl_->dataset_->finish_inputs(batch.input);
  return batch;
}

DataLoaderPosition DataLoader::position() const { return {impl_->epoch_, impl_->next_batch_, impl_->options_.seed()}; }

void DataLoader::set_position(const DataLoaderPosition& position) {
  const bool reseeded = position.seed != impl_->options_.seed();
  impl_->options_.seed() = position.seed;
  if (reseeded) rejoin_stream();
  start_epoch(position.epoch);
  if (position.batch < 0 || position.batch > num_batches()) {
    throw std::invalid_argument("DataLoader::set_position: batch " + std::to_string(position.batch) +
                                " is outside epoch's 0.." + std::to_string(num_batches()));
  }
  quiesce();
  impl_->next_batch_ = position.batch;
  if (prefetching() && impl_->next_batch_ < num_batches()) request(impl_->next_batch_);
}

}  // namespace baton
