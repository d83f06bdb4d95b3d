// Time: an amount of training in one unit; Timestamp: where a run is, in every unit at once.
//
//   auto max = baton::Time::parse("3ep");      // 3 epochs
//   auto warmup = baton::Time::parse("0.1dur"); // a tenth of max_duration
//   auto wall = baton::Time::parse("1h30m");   // 5400 seconds
//   ts = ts.to_next_batch(/*samples=*/128);
//   bool done = ts.get(max.unit()) >= max;
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace baton {

enum class TimeUnit { kIteration, kEpoch, kBatch, kSample, kToken, kDuration, kSecond };

// "iter", "ep", "ba", "sp", "tok", "dur", "s".
std::string_view to_string(TimeUnit unit);
// Accepts the suffixes above. Throws std::invalid_argument naming the bad string.
TimeUnit parse_time_unit(std::string_view suffix);

// A value with a unit. Iterations, epochs, batches, samples and tokens are whole numbers;
// durations (a fraction of max_duration) and seconds may have fractions.
// Arithmetic and ordering need both sides in the same unit and throw std::invalid_argument
// otherwise; == and != are false/true across units.
class Time {
 public:
  Time(double value, TimeUnit unit);

  // "10ep", "500ba", "1000sp", "3e4tok", "0.5dur", "2iter", "90s", "1h30m", "1h30m15s".
  // Throws std::invalid_argument with the bad string and the accepted forms.
  static Time parse(std::string_view text);

  static Time from_iteration(int64_t n) { return {static_cast<double>(n), TimeUnit::kIteration}; }
  static Time from_epoch(int64_t n) { return {static_cast<double>(n), TimeUnit::kEpoch}; }
  static Time from_batch(int64_t n) { return {static_cast<double>(n), TimeUnit::kBatch}; }
  static Time from_sample(int64_t n) { return {static_cast<double>(n), TimeUnit::kSample}; }
  static Time from_token(int64_t n) { return {static_cast<double>(n), TimeUnit::kToken}; }
  static Time from_duration(double fraction) { return {fraction, TimeUnit::kDuration}; }
  static Time from_seconds(double seconds) { return {seconds, TimeUnit::kSecond}; }

  double value() const { return value_; }
  // The value as a whole number (rounded to nearest); meant for the integral units.
  int64_t count() const;
  TimeUnit unit() const { return unit_; }

  // Parseable form: "10ep", "0.5dur", "1h30m".
  std::string to_string() const;

  Time operator+(const Time& other) const;
  Time operator-(const Time& other) const;
  // Scales the value; integral units round to the nearest whole number.
  Time operator*(double factor) const;
  // The ratio of two times in the same unit: Time("3ep") / Time("6ep") == 0.5.
  double operator/(const Time& other) const;

  bool operator==(const Time& other) const { return unit_ == other.unit_ && value_ == other.value_; }
  bool operator!=(const Time& other) const { return !(*this == other); }
  bool operator<(const Time& other) const;
  bool operator<=(const Time& other) const;
  bool operator>(const Time& other) const;
  bool operator>=(const Time& other) const;

 private:
  void require_same_unit(const Time& other, const char* op) const;

  double value_;
  TimeUnit unit_;
};

// Where a run is. Counts never go backwards; each to_next_* returns a new Timestamp.
class Timestamp {
 public:
  Timestamp();
  ~Timestamp();
  Timestamp(const Timestamp& other);
  Timestamp& operator=(const Timestamp& other);

  int64_t iteration() const;
  int64_t epoch() const;
  int64_t batch() const;
  int64_t sample() const;
  int64_t token() const;
  int64_t epoch_in_iteration() const;
  int64_t batch_in_epoch() const;
  int64_t sample_in_epoch() const;
  int64_t token_in_epoch() const;
  // Wall-clock seconds spent in training: in total, this iteration, this epoch, last batch.
  double total_wct() const;
  double iteration_wct() const;
  double epoch_wct() const;
  double batch_wct() const;

  // The count in one unit (kSecond: total_wct). kDuration needs a max_duration: use
  // State::elapsed_duration(). Throws std::invalid_argument for kDuration.
  Time get(TimeUnit unit) const;

  // After a batch of `samples` samples and `tokens` tokens that took `seconds`.
  Timestamp to_next_batch(int64_t samples, int64_t tokens = 0, double seconds = 0.0) const;
  // After the epoch ends: the in-epoch counters restart.
  Timestamp to_next_epoch(double seconds = 0.0) const;
  // After the iteration ends: the in-iteration counters restart.
  Timestamp to_next_iteration(double seconds = 0.0) const;

  // "[ep=1][ba=300][sp=38400]".
  std::string to_string() const;

  nlohmann::json state_dict() const;
  // Throws std::invalid_argument naming a missing or mistyped key.
  void load_state_dict(const nlohmann::json& state);

  bool operator==(const Timestamp& other) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
