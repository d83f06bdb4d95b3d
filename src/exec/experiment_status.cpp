#include "experiment_status.h"

#include <unistd.h>

#include <sstream>

namespace baton::detail {

std::string format_duration(double s) {
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
  return buf;
}

StatusLine::StatusLine(Chain& chain, int64_t trials, std::FILE* out)
    : chain_(chain), trials_(trials), out_(out), tty_(out != nullptr && ::isatty(::fileno(out))) {}

void StatusLine::print(const SearchProgress& p, bool force) {
  const double e = elapsed();
  if (out_ == nullptr || (!force && e - last_line_ < (tty_ ? 0.2 : 10.0))) return;
  last_line_ = e;
  int failed = 0, running = 0;
  for (const auto& t : chain_.list()) {
    failed += t.status == TrialStatus::kFailed ? 1 : 0;
    running += t.status == TrialStatus::kRunning ? 1 : 0;
  }
  std::ostringstream line;
  line << "trials " << p.completed << "/" << trials_ << " done, " << running << " running, " << failed << " failed";
  if (!p.stage.empty()) line << " | " << p.stage;
  if (!p.front.empty())
    line << " | Pareto front " << p.front.size() << " trial" << (p.front.size() == 1 ? "" : "s");
  else if (p.best)
    line << " | best " << *p.best->metrics.final << " (trial " << p.best->id << " " << p.best->parameters.dump() << ")";
  line << " | " << format_duration(e) << " elapsed";
  if (p.completed > 0 && p.completed < trials_)
    line << ", ETA "
         << format_duration(e / static_cast<double>(p.completed) * static_cast<double>(trials_ - p.completed));
  std::string text = line.str();
  if (tty_ && text.size() > 160) text = text.substr(0, 157) + "...";
  std::fprintf(out_, tty_ ? "\r\033[K%s" : "%s\n", text.c_str());
  std::fflush(out_);
}

StatusTicker::StatusTicker(Chain& chain, StatusLine& status, const std::atomic<int>& stop)
    : chain_(chain), status_(status), stop_(stop), thread_([this] { loop(); }) {}

void StatusTicker::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    finished_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void StatusTicker::progress(const SearchProgress& p) {
  std::lock_guard lock(mutex_);
  last_ = p;
  status_.print(p, false);
}

void StatusTicker::loop() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::seconds(1), [&] { return finished_; })) {
    if (stop_.load() != 0) {
      for (const auto& t : chain_.list()) {
        if (t.status == TrialStatus::kRunning && stopped_.insert(t.id).second) chain_.kill(t.id);
      }
    }
    status_.print(last_, false);
  }
}

}  // namespace baton::detail
