#include "baton/data/shared_batches.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace baton {

SharedBatches::SharedBatches(int64_t max_held) : max_held_(max_held) {
  if (max_held < 1) {
    throw std::invalid_argument("SharedBatches: max_held must be at least 1 batch, got " + std::to_string(max_held));
  }
}

int SharedBatches::attach(const std::string& signature) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (positions_.empty()) {
    signature_ = signature;
    held_.clear();
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
  const Key first = slowest();
  for (auto it = held_.begin(); it != held_.end() && it->first < first;) {
    it = it->second.ready ? held_.erase(it) : std::next(it);  // one being made is its maker's to settle
  }
}

Batch SharedBatches::take(int handle, int64_t epoch, int64_t index, const std::function<Batch()>& make) {
  const Key key{epoch, index};
  std::unique_lock<std::mutex> lock(mutex_);
  const auto me = positions_.find(handle);
  if (me == positions_.end()) throw std::logic_error("SharedBatches::take: the loader is not attached");
  me->second = key;  // where this loader is now (a loader that started over moved back)
  drop_passed();
  changed_.notify_all();
  bool waited = false;
  while (true) {
    const auto it = held_.find(key);
    if (it != held_.end() && it->second.ready) break;
    const bool ahead = key > slowest() && static_cast<int64_t>(held_.size()) >= max_held_;
    if (it != held_.end() || ahead) {  // being made by another loader, or too far ahead of the slowest
      if (ahead && !waited) ++stats_.waits;
      waited = waited || ahead;
      changed_.wait(lock);
      continue;
    }
    held_.emplace(key, Entry{});
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    Batch made;
    try {
      made = make();
    } catch (...) {
      lock.lock();
      held_.erase(key);
      changed_.notify_all();
      throw;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    lock.lock();
    Entry& entry = held_.at(key);
    entry.ready = true;
    entry.batch = std::move(made);
    ++stats_.made;
    stats_.make_seconds += seconds;
    stats_.most_held = std::max(stats_.most_held, static_cast<int64_t>(held_.size()));
    break;
  }
  Batch out = held_.at(key).batch;
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
