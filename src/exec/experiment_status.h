// An experiment's status while it runs (private to src/exec): the status line, and the thread that
// redraws it and, once the experiment is stopped, ends the trials that still run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "baton/exec/middleware.h"
#include "baton/exec/search.h"

namespace baton::detail {

// "42s", "3m07s", "1h05m".
std::string format_duration(double s);

// Trials done, running and failed, the best so far, elapsed time and ETA: redrawn in place on a
// terminal (at most 5 times a second), a line every 10 s in a log. Nothing without `out`.
class StatusLine {
 public:
  StatusLine(Chain& chain, int64_t trials, std::FILE* out);
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  bool tty() const { return tty_; }
  void print(const SearchProgress& p, bool force);

 private:
  Chain& chain_;
  int64_t trials_;
  std::FILE* out_;
  bool tty_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_line_ = -1e9;
};

// While the search runs: the status line is redrawn at each completion and once a second (so that
// elapsed time and the running count move while long trials run); once `stop` is not 0, each tick
// ends what runs (its whole process group: SIGTERM, then SIGKILL). stop() (or the destructor) joins it.
class StatusTicker {
 public:
  StatusTicker(Chain& chain, StatusLine& status, const std::atomic<int>& stop);
  ~StatusTicker() { stop(); }
  StatusTicker(const StatusTicker&) = delete;
  StatusTicker& operator=(const StatusTicker&) = delete;
  void stop();
  void progress(const SearchProgress& p);
  // Read after stop().
  const SearchProgress& last() const { return last_; }
  const std::set<int64_t>& stopped() const { return stopped_; }  // running when the search was stopped

 private:
  void loop();
  Chain& chain_;
  StatusLine& status_;
  const std::atomic<int>& stop_;
  SearchProgress last_;
  std::set<int64_t> stopped_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool finished_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace baton::detail
