#include "baton/data/shared_batches.h"

#include <algorithm>
#include <chrono>
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

SharedBatches::SharedBatches(int64_t max_held_bytes, Kind kind) : max_held_bytes_(max_held_bytes), kind_(kind) {
  if (max_held_bytes < 1) {
    throw std::invalid_argument("SharedBatches: max_held_bytes must be at least 1, got " +
                                std::to_string(max_held_bytes));
  }
}

int SharedBatches::attach(const std::string& signature) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (positions_.empty()) {
    signature_ = signature;
    held_.clear();
    held_bytes_ = 0;
  } else if (signature != signature_) {
    throw std::invalid_argument("shared batches: a loader of " + signature + " cannot take the batches of " +
                                signature_ + " (the loaders of one stream share a data set, batch size and order)");
  }
  const int handle = next_handle_++;
  positions_[handle] = {0, 0};
  return handle;
}

void SharedBatches::detach(int handle) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    positions_.erase(handle);
    drop_passed();
  }
  changed_.notify_all();
}

SharedBatches::Key SharedBatches::slowest() const {
  Key out{INT64_MAX, INT64_MAX};
  for (const auto& [handle, position] : positions_) out = std::min(out, position);
  return out;
}

void SharedBatches::drop_passed() {
  if (kind_ == Kind::kEvaluation) return;  // kept for the next evaluations
  const Key first = slowest();
  for (auto it = held_.begin(); it != held_.end() && it->first < first;) {
    if (!it->second.ready) {  // one being made is its maker's to settle
      ++it;
      continue;
    }
    held_bytes_ -= it->second.bytes;
    it = held_.erase(it);
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
  held_.emplace(key, Entry{});
  lock.unlock();
  double seconds = 0;
  Batch made;
  try {
    made = make_timed(make, seconds);
  } catch (...) {
    lock.lock();
    held_.erase(key);
    changed_.notify_all();
    throw;
  }
  lock.lock();
  Entry& entry = held_.at(key);
  entry.ready = true;
  entry.bytes = bytes_of(made);
  entry.batch = made;
  held_bytes_ += entry.bytes;
  ++stats_.made;
  stats_.make_seconds += seconds;
  stats_.most_held = std::max(stats_.most_held, static_cast<int64_t>(held_.size()));
  stats_.most_held_bytes = std::max(stats_.most_held_bytes, held_bytes_);
  changed_.notify_all();
  return made;
}

Batch SharedBatches::take_kept(const Key& key, const std::function<Batch()>& make) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (auto it = held_.find(key); it != held_.end(); it = held_.find(key)) {
    if (it->second.ready) {
      ++stats_.taken;
      return it->second.batch;
    }
    changed_.wait(lock);  // being made by another loader
  }
  ++stats_.taken;
  if (held_bytes_ < max_held_bytes_) return make_held(lock, key, make);
  lock.unlock();
  double seconds = 0;
  Batch alone = make_timed(make, seconds);
  lock.lock();
  ++stats_.made_alone;
  stats_.make_seconds += seconds;
  return alone;
}

Batch SharedBatches::take(int handle, int64_t epoch, int64_t index, const std::function<Batch()>& make) {
  const Key key{epoch, index};
  if (kind_ == Kind::kEvaluation) return take_kept(key, make);
  std::unique_lock<std::mutex> lock(mutex_);
  const auto me = positions_.find(handle);
  if (me == positions_.end()) throw std::logic_error("SharedBatches::take: the loader is not attached");
  me->second = key;  // where this loader is now (a loader that started over moved back)
  drop_passed();
  changed_.notify_all();
  bool waited = false;
  Batch out;
  while (true) {
    const auto it = held_.find(key);
    if (it != held_.end() && it->second.ready) {
      out = it->second.batch;
      break;
    }
    const bool ahead = key > slowest() && held_bytes_ >= max_held_bytes_;
    if (it == held_.end() && !ahead) {
      out = make_held(lock, key, make);
      break;
    }
    if (ahead && !waited) ++stats_.waits;  // too far ahead of the slowest, or being made by another loader
    waited = waited || ahead;
    changed_.wait(lock);
  }
  ++stats_.taken;
  me->second = {epoch, index + 1};
  drop_passed();
  lock.unlock();
  changed_.notify_all();
  return out;
}

SharedBatches::Stats SharedBatches::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace baton
