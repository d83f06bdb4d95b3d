#include "plan/executor.h"

namespace baton::detail {

Executor::Executor(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    threads_.emplace_back([this] {
      std::unique_lock lock(mutex_);
      for (;;) {
        changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping
        Job job = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        run_job(job);
        lock.lock();
      }
    });
  }
}

Executor::~Executor() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& t : threads_) t.join();
}

void Executor::run_job(Job& job) {
  job.fn();
  {
    std::lock_guard lock(mutex_);
    --job.batch->remaining;
  }
  changed_.notify_all();
}

void Executor::run_all(std::vector<std::function<void()>> jobs) {
  if (jobs.empty()) return;
  if (jobs.size() == 1) {
    jobs[0]();
    return;
  }
  auto batch = std::make_shared<Batch>();
  batch->remaining = static_cast<int>(jobs.size());
  Job first{std::move(jobs[0]), batch};
  {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 1; i < jobs.size(); ++i) queue_.push_back({std::move(jobs[i]), batch});
  }
  changed_.notify_all();
  run_job(first);
  std::unique_lock lock(mutex_);
  while (batch->remaining > 0) {
    if (!queue_.empty()) {  // help: this batch's jobs, or whatever is queued before them
      Job job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      run_job(job);
      lock.lock();
      continue;
    }
    changed_.wait(lock, [&] { return batch->remaining == 0 || !queue_.empty(); });
  }
}

Ticker::Ticker() : thread_([this] { loop(); }) {}

Ticker::~Ticker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

int Ticker::add(std::chrono::milliseconds interval, std::function<void()> fn) {
  std::lock_guard lock(mutex_);
  const int id = next_id_++;
  entries_[id] = {interval, std::chrono::steady_clock::now() + interval, std::move(fn)};
  changed_.notify_all();
  return id;
}

void Ticker::remove(int id) {
  std::unique_lock lock(mutex_);
  entries_.erase(id);
  changed_.wait(lock, [&] { return running_ != id; });
}

void Ticker::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (entries_.empty()) {
      changed_.wait(lock);
      continue;
    }
    auto next = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.due < next->second.due) next = it;
    }
    if (std::chrono::steady_clock::now() < next->second.due) {
      // A copy: remove() may erase the entry while this thread waits (wait_until reads it after).
      const auto due = next->second.due;
      changed_.wait_until(lock, due);
      continue;
    }
    const int id = next->first;
    auto fn = next->second.fn;
    next->second.due = std::chrono::steady_clock::now() + next->second.interval;
    running_ = id;
    lock.unlock();
    fn();
    lock.lock();
    running_ = -1;
    changed_.notify_all();
  }
}

}  // namespace baton::detail
