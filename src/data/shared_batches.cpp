#include "baton/data/shared_batches.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>

namespace baton {

namespace {

int64_t bytes_of(const Batch& batch) {
  int64_t bytes = 0;
  for (const at::Tensor& t : {batch.input, batch.target}) {
    if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
  }
  return bytes;
}

}  // namespace

struct SharedBatches::Impl {
  Impl(int64_t max_held_bytes, Kind kind) : max_held_bytes_(max_held_bytes), kind_(kind) {}
  const int64_t max_held_bytes_;
  const Kind kind_;
  int64_t held_bytes_ = 0;  // of the ready batches held
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::string signature_;
  int next_handle_ = 0;
  std::map<int, Key> positions_;  // each attached loader's next batch
  std::map<Key, Entry> held_;
  Stats stats_;
};

SharedBatches::~SharedBatches() = default;

SharedBatches::SharedBatches(int64_t max_held_bytes, Kind kind) : impl_(std::make_unique<Impl>(max_held_bytes, kind)) {
  if (max_held_bytes < 1) {
    throw std::invalid_argument("SharedBatches: max_held_bytes must be at least 1, got " +
                                std::to_string(max_held_bytes));
  }
}

int SharedBatches::attach(const std::string& signature) {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  if (impl_->positions_.empty()) {
    impl_->signature_ = signature;
    impl_->held_.clear();
    impl_->held_bytes_ = 0;
  } else if (signature != impl_->signature_) {
    throw std::invalid_argument("shared batches: a loader of " + signature + " cannot take the batches of " +
                                impl_->signature_ +
                                " (the loaders of one stream share a data set, batch size and order)");
  }
  const int handle = impl_->next_handle_++;
  impl_->positions_[handle] = {0, 0};
  return handle;
}

void SharedBatches::detach(int handle) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    impl_->positions_.erase(handle);
    drop_passed();
  }
  impl_->changed_.notify_all();
}

SharedBatches::Key SharedBatches::slowest() const {
  Key out{INT64_MAX, INT64_MAX};
  for (const auto& [handle, position] : impl_->positions_) out = std::min(out, position);
  return out;
}

void SharedBatches::drop_passed() {
  if (impl_->kind_ == Kind::kEvaluation) return;  // kept for the next evaluations
  const Key first = slowest();
  for (auto it = impl_->held_.begin(); it != impl_->held_.end() && it->first < first;) {
    if (!it->second.ready) {  // one being made is its maker's to settle
      ++it;
      continue;
    }
    impl_->held_bytes_ -= it->second.bytes;
    it = impl_->held_.erase(it);
  }
}

namespace {

Batch make_timed(const std::function<Batch()>& make, double& seconds) {
  const auto start = std::chrono::steady_clock::now();
  Batch made = make();
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return made;
}

}  // namespace

Batch SharedBatches::make_held(std::unique_lock<std::mutex>& lock, const Key& key, const std::function<Batch()>& make) {
  impl_->held_.emplace(key, Entry{});
  lock.unlock();
  double seconds = 0;
  Batch made;
  try {
    made = make_timed(make, seconds);
  } catch (...) {
    lock.lock();
    impl_->held_.erase(key);
    impl_->changed_.notify_all();
    throw;
  }
  lock.lock();
  Entry& entry = impl_->held_.at(key);
  entry.ready = true;
  entry.bytes = bytes_of(made);
  entry.batch = made;
  impl_->held_bytes_ += entry.bytes;
  ++impl_->stats_.made;
  impl_->stats_.make_seconds += seconds;
  impl_->stats_.most_held = std::max(impl_->stats_.most_held, static_cast<int64_t>(impl_->held_.size()));
  impl_->stats_.most_held_bytes = std::max(impl_->stats_.most_held_bytes, impl_->held_bytes_);
  impl_->changed_.notify_all();
  return made;
}

Batch SharedBatches::take_kept(const Key& key, const std::function<Batch()>& make) {
  std::unique_lock<std::mutex> lock(impl_->mutex_);
  for (auto it = impl_->held_.find(key); it != impl_->held_.end(); it = impl_->held_.find(key)) {
    if (it->second.ready) {
      ++impl_->stats_.taken;
      return it->second.batch;
    }
    impl_->changed_.wait(lock);  // being made by another loader
  }
  ++impl_->stats_.taken;
  if (impl_->held_bytes_ < impl_->max_held_bytes_) return make_held(lock, key, make);
  lock.unlock();
  double seconds = 0;
  Batch alone = make_timed(make, seconds);
  lock.lock();
  ++impl_->stats_.made_alone;
  impl_->stats_.make_seconds += seconds;
  return alone;
}

Batch SharedBatches::take(int handle, int64_t epoch, int64_t index, const std::function<Batch()>& make) {
  const Key key{epoch, index};
  if (impl_->kind_ == Kind::kEvaluation) return take_kept(key, make);
  std::unique_lock<std::mutex> lock(impl_->mutex_);
  const auto me = impl_->positions_.find(handle);
  if (me == impl_->positions_.end()) throw std::logic_error("SharedBatches::take: the loader is not attached");
  me->second = key;  // where this loader is now (a loader that started over moved back)
  drop_passed();
  impl_->changed_.notify_all();
  bool waited = false;
  Batch out;
  while (true) {
    const auto it = impl_->held_.find(key);
    if (it != impl_->held_.end() && it->second.ready) {
      out = it->second.batch;
      break;
    }
    const bool ahead = key > slowest() && impl_->held_bytes_ >= impl_->max_held_bytes_;
    if (it == impl_->held_.end() && !ahead) {
      out = make_held(lock, key, make);
      break;
    }
    if (ahead && !waited) ++impl_->stats_.waits;  // too far ahead of the slowest, or being made by another loader
    waited = waited || ahead;
    impl_->changed_.wait(lock);
  }
  ++impl_->stats_.taken;
  me->second = {epoch, index + 1};
  drop_passed();
  lock.unlock();
  impl_->changed_.notify_all();
  return out;
}

SharedBatches::Stats SharedBatches::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  return impl_->stats_;
}

}  // namespace baton
