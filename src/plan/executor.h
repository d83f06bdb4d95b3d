// The fixed thread pool and the timer thread of a LocalSession (private to plan).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace baton::detail {

// N threads take jobs from one queue. run_all() queues a batch and returns when it is done; the
// calling thread runs queued jobs meanwhile, so nested batches never wait on an idle pool.
class Executor {
 public:
  explicit Executor(int threads);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;
  // Jobs must not throw (the session catches inside them); one that does ends the process.
  void run_all(std::vector<std::function<void()>> jobs);
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  struct Batch {
    int remaining = 0;
  };
  struct Job {
    std::function<void()> fn;
    std::shared_ptr<Batch> batch;
  };
  void run_job(Job& job);
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// One thread runs registered functions every interval. remove() returns once the function is not
// running and will not run again.
class Ticker {
 public:
  Ticker();
  ~Ticker();
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;
  int add(std::chrono::milliseconds interval, std::function<void()> fn);
  void remove(int id);

 private:
  struct Entry {
    std::chrono::milliseconds interval;
    std::chrono::steady_clock::time_point due;
    std::function<void()> fn;
  };
  void loop();
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, Entry> entries_;
  int next_id_ = 0;
  int running_ = -1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace baton::detail
