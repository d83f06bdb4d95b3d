#include "baton/loggers/progress_bar.h"

#include <unistd.h>
#include <memory>

#include <cmath>

#include "baton/core/state.h"

namespace baton {
namespace {

std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  }
  return buf;
}

std::string metrics_text(const Metrics& metrics) {
  std::string out;
  char buf[64];
  for (const auto& [name, value] : metrics) {
    std::snprintf(buf, sizeof buf, std::abs(value) >= 1e6 ? "%s%s %.4g" : "%s%s %.4f", out.empty() ? "" : "  ",
                  name.c_str(), value);
    out += buf;
  }
  return out;
}

int64_t total_epochs(const State& state) {
  if (state.max_duration && state.max_duration->unit() == TimeUnit::kEpoch) return state.max_duration->count();
  if (state.max_duration && state.max_duration->unit() == TimeUnit::kBatch && state.dataloader_len.value_or(0) > 0) {
    return (state.max_duration->count() + *state.dataloader_len - 1) / *state.dataloader_len;
  }
  return 0;
}

}  // namespace

struct ProgressBar::Impl {
  std::FILE* out_;
  bool terminal_;
  bool line_open_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
  std::chrono::steady_clock::time_point epoch_start_{};
  int64_t epoch_start_sample_ = 0;
  double loss_ = 0.0;
  Metrics last_eval_;
};

ProgressBar::~ProgressBar() = default;

ProgressBar::ProgressBar(std::FILE* out, std::optional<bool> terminal) : impl_(std::make_unique<Impl>()) {
  impl_->out_ = out;
  impl_->terminal_ = terminal.value_or(isatty(fileno(out)) == 1);
}

void ProgressBar::fit_start(State& state, Logger& logger) { epoch_start(state, logger); }

void ProgressBar::epoch_start(State& state, Logger&) {
  impl_->epoch_start_ = std::chrono::steady_clock::now();
  impl_->epoch_start_sample_ = state.timestamp.sample();
}

void ProgressBar::log_metrics(const Metrics& metrics, int64_t) {
  for (const auto& [name, value] : metrics) {
    if (name == "train/loss")
      impl_->loss_ = value;
    else if (name.find('/') != std::string::npos && name.rfind("train/", 0) != 0)
      impl_->last_eval_[name] = value;
  }
}

void ProgressBar::batch_end(State& state, Logger&) {
  if (impl_->terminal_) draw(state, false);
}

void ProgressBar::draw(const State& state, bool force, bool epoch_done) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - impl_->last_draw_ < std::chrono::milliseconds(100)) return;
  impl_->last_draw_ = now;
  const int64_t total = state.dataloader_len.value_or(0);
  // At epoch_end the timestamp already points at the next epoch: show the finished one, full.
  const int64_t done = epoch_done ? total : state.timestamp.batch_in_epoch();
  const int64_t epoch = epoch_done ? state.timestamp.epoch() : state.timestamp.epoch() + 1;
  const double elapsed = std::chrono::duration<double>(now - impl_->epoch_start_).count();
  const double rate =
      elapsed > 0 ? static_cast<double>(state.timestamp.sample() - impl_->epoch_start_sample_) / elapsed : 0;
  const double eta =
      done > 0 && total > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : NAN;
  constexpr int kWidth = 20;
  const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : 0;
  std::string bar =
      std::string(static_cast<std::size_t>(filled), '#') + std::string(static_cast<std::size_t>(kWidth - filled), '.');
  const int64_t epochs = total_epochs(state);
  const std::string eval = impl_->last_eval_.empty() ? "" : "  " + metrics_text(impl_->last_eval_);
  std::fprintf(impl_->out_, "\repoch %lld%s [%s] %lld/%lld batches  %.0f sp/s  ETA %s  loss %.4f%s\033[K",
               static_cast<long long>(epoch), epochs > 0 ? ("/" + std::to_string(epochs)).c_str() : "", bar.c_str(),
               static_cast<long long>(done), static_cast<long long>(total), rate, clock_text(eta).c_str(), impl_->loss_,
               eval.c_str());
  std::fflush(impl_->out_);
  impl_->line_open_ = true;
}

void ProgressBar::finish_line() {
  if (impl_->line_open_) std::fputc('\n', impl_->out_);
  impl_->line_open_ = false;
}

void ProgressBar::epoch_end(State& state, Logger&) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - impl_->epoch_start_).count();
  const double rate =
      elapsed > 0 ? static_cast<double>(state.timestamp.sample() - impl_->epoch_start_sample_) / elapsed : 0;
  if (impl_->terminal_) {
    draw(state, true, /*epoch_done=*/true);
    finish_line();
    return;
  }
  std::fprintf(impl_->out_, "epoch %lld done: %lld batches in %s, %.0f samples/s, train/loss %.4f\n",
               static_cast<long long>(state.timestamp.epoch()), static_cast<long long>(state.timestamp.batch()),
               clock_text(elapsed).c_str(), rate, impl_->loss_);
  std::fflush(impl_->out_);
}

void ProgressBar::eval_end(State& state, Logger&) {
  finish_line();
  Metrics mine;
  for (const auto& [name, value] : impl_->last_eval_) {
    if (name.rfind(state.dataloader_label + "/", 0) == 0) mine[name] = value;
  }
  std::fprintf(impl_->out_, "eval at %s: %s\n", state.timestamp.to_string().c_str(), metrics_text(mine).c_str());
  std::fflush(impl_->out_);
}

void ProgressBar::fit_end(State&, Logger&) { finish_line(); }

struct ConsoleLogger::Impl {
  Time interval_ = Time(1, TimeUnit::kEpoch);
  std::FILE* out_ = nullptr;
  ProgressBar* bar_ = nullptr;
  Metrics latest_;
};

ConsoleLogger::~ConsoleLogger() = default;

ConsoleLogger::ConsoleLogger(Time interval, std::FILE* out, ProgressBar* bar) : impl_(std::make_unique<Impl>()) {
  impl_->interval_ = interval;
  impl_->out_ = out;
  impl_->bar_ = bar;
}

void ConsoleLogger::log_metrics(const Metrics& metrics, int64_t) {
  for (const auto& [name, value] : metrics) impl_->latest_[name] = value;
}

void ConsoleLogger::print(const State& state) {
  if (impl_->bar_ != nullptr) impl_->bar_->finish_line();
  std::fprintf(impl_->out_, "%s %s\n", state.timestamp.to_string().c_str(), metrics_text(impl_->latest_).c_str());
  std::fflush(impl_->out_);
}

void ConsoleLogger::batch_end(State& state, Logger&) {
  if (impl_->interval_.unit() == TimeUnit::kBatch && impl_->interval_.count() > 0 &&
      state.timestamp.batch() % impl_->interval_.count() == 0) {
    print(state);
  }
}

void ConsoleLogger::epoch_end(State& state, Logger&) {
  if (impl_->interval_.unit() == TimeUnit::kEpoch && impl_->interval_.count() > 0 &&
      state.timestamp.epoch() % impl_->interval_.count() == 0) {
    print(state);
  }
}

void ConsoleLogger::eval_end(State& state, Logger&) {
  if (impl_->interval_.value() > 0 && impl_->bar_ == nullptr) print(state);
}

}  // namespace baton
