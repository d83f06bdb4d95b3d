#include "baton/core/time.h"

#include <charconv>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace baton {
namespace {

constexpr const char* kAcceptedForms =
    "expected a number and a unit: 10ep, 500ba, 1000sp, 3e4tok, 2iter, 0.5dur, "
    "or a wall-clock time such as 90s, 45m, 1h30m";

bool is_integral_unit(TimeUnit unit) { return unit != TimeUnit::kDuration && unit != TimeUnit::kSecond; }

const char* unit_noun(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kIteration: return "iterations";
    case TimeUnit::kEpoch: return "epochs";
    case TimeUnit::kBatch: return "batches";
    case TimeUnit::kSample: return "samples";
    case TimeUnit::kToken: return "tokens";
    case TimeUnit::kDuration: return "durations";
    case TimeUnit::kSecond: return "seconds";
  }
  return "times";
}

[[noreturn]] void bad_time(std::string_view text, const std::string& why) {
  throw std::invalid_argument("invalid time '" + std::string(text) + "': " + why);
}

// Parses a leading non-negative decimal number; returns the rest of the string.
std::string_view parse_number(std::string_view whole, std::string_view s, double& out) {
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) bad_time(whole, "a time must not carry a sign");
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end == s.data()) bad_time(whole, kAcceptedForms);
  if (!std::isfinite(out)) bad_time(whole, "the number must be finite");
  return s.substr(static_cast<std::size_t>(end - s.data()));
}

std::string format_number(double value) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(value);
}

// "1h30m15s", "45m", "90s", "1.5h" -> seconds; nullopt when `s` is not of that form.
std::optional<double> parse_clock(std::string_view whole, std::string_view s) {
  double total = 0.0;
  int last = -1;  // index of the last part seen: 0 h, 1 m, 2 s
  while (!s.empty()) {
    if (!(s.front() >= '0' && s.front() <= '9') && s.front() != '.') return std::nullopt;
    double value = 0.0;
    s = parse_number(whole, s, value);
    if (s.empty()) return std::nullopt;
    const char c = s.front();
    const int part = c == 'h' ? 0 : c == 'm' ? 1 : c == 's' ? 2 : -1;
    if (part < 0) return std::nullopt;
    if (part <= last) bad_time(whole, "hours, minutes and seconds must come once each, in that order (1h30m15s)");
    last = part;
    total += value * (part == 0 ? 3600.0 : part == 1 ? 60.0 : 1.0);
    s.remove_prefix(1);
  }
  if (last < 0) return std::nullopt;
  if (total > 9.0e15) bad_time(whole, "the number is too large");
  return total;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view to_string(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kIteration: return "iter";
    case TimeUnit::kEpoch: return "ep";
    case TimeUnit::kBatch: return "ba";
    case TimeUnit::kSample: return "sp";
    case TimeUnit::kToken: return "tok";
    case TimeUnit::kDuration: return "dur";
    case TimeUnit::kSecond: return "s";
  }
  return "?";
}

TimeUnit parse_time_unit(std::string_view suffix) {
  for (TimeUnit unit : {TimeUnit::kIteration, TimeUnit::kEpoch, TimeUnit::kBatch, TimeUnit::kSample, TimeUnit::kToken,
                        TimeUnit::kDuration, TimeUnit::kSecond}) {
    if (to_string(unit) == suffix) return unit;
  }
  throw std::invalid_argument("unknown time unit '" + std::string(suffix) +
                              "': expected one of iter, ep, ba, sp, tok, dur, s");
}

Time::Time(double value, TimeUnit unit) : value_(value), unit_(unit) {
  if (!std::isfinite(value)) throw std::invalid_argument("invalid time: the value must be finite");
  if (is_integral_unit(unit) && value != std::floor(value)) {
    throw std::invalid_argument("invalid time '" + format_number(value) + std::string(baton::to_string(unit)) +
                                "': " + unit_noun(unit) + " must be a whole number");
  }
}

Time Time::parse(std::string_view text) {
  const std::string_view s = trim(text);
  if (s.empty()) bad_time(text, kAcceptedForms);
  if (auto seconds = parse_clock(text, s)) return Time(*seconds, TimeUnit::kSecond);
  double value = 0.0;
  const std::string_view suffix = parse_number(text, s, value);
  if (suffix.empty()) bad_time(text, "the unit is missing; " + std::string(kAcceptedForms));
  TimeUnit unit;
  try {
    unit = parse_time_unit(suffix);
  } catch (const std::invalid_argument&) {
    bad_time(text, "unknown unit '" + std::string(suffix) + "'; " + kAcceptedForms);
  }
  if (is_integral_unit(unit) && value != std::floor(value)) {
    bad_time(text, std::string(unit_noun(unit)) + " must be a whole number");
  }
  if (is_integral_unit(unit) && value > 9.0e15) bad_time(text, "the number is too large");
  return Time(value, unit);
}

int64_t Time::count() const { return std::llround(value_); }

std::string Time::to_string() const {
  if (unit_ == TimeUnit::kSecond) {
    if (value_ != std::floor(value_) || value_ == 0.0) return format_number(value_) + "s";
    int64_t rest = std::llround(value_);
    std::string out;
    if (rest >= 3600) out += std::to_string(rest / 3600) + "h", rest %= 3600;
    if (rest >= 60) out += std::to_string(rest / 60) + "m", rest %= 60;
    if (rest > 0) out += std::to_string(rest) + "s";
    return out;
  }
  if (is_integral_unit(unit_)) return std::to_string(count()) + std::string(baton::to_string(unit_));
  return format_number(value_) + std::string(baton::to_string(unit_));
}

void Time::require_same_unit(const Time& other, const char* op) const {
  if (unit_ != other.unit_) {
    throw std::invalid_argument("cannot compute " + to_string() + " " + op + " " + other.to_string() +
                                ": the times have different units; convert one first");
  }
}

Time Time::operator+(const Time& other) const {
  require_same_unit(other, "+");
  return {value_ + other.value_, unit_};
}

Time Time::operator-(const Time& other) const {
  require_same_unit(other, "-");
  return {value_ - other.value_, unit_};
}

Time Time::operator*(double factor) const {
  const double scaled = value_ * factor;
  return {is_integral_unit(unit_) ? std::round(scaled) : scaled, unit_};
}

double Time::operator/(const Time& other) const {
  require_same_unit(other, "/");
  if (other.value_ == 0.0)
    throw std::invalid_argument("cannot divide " + to_string() + " by zero " + other.to_string());
  return value_ / other.value_;
}

bool Time::operator<(const Time& other) const {
  require_same_unit(other, "<");
  return value_ < other.value_;
}
bool Time::operator<=(const Time& other) const {
  require_same_unit(other, "<=");
  return value_ <= other.value_;
}
bool Time::operator>(const Time& other) const {
  require_same_unit(other, ">");
  return value_ > other.value_;
}
bool Time::operator>=(const Time& other) const {
  require_same_unit(other, ">=");
  return value_ >= other.value_;
}

struct Timestamp::Impl {
  int64_t iteration_ = 0;
  int64_t epoch_ = 0;
  int64_t batch_ = 0;
  int64_t sample_ = 0;
  int64_t token_ = 0;
  int64_t epoch_in_iteration_ = 0;
  int64_t batch_in_epoch_ = 0;
  int64_t sample_in_epoch_ = 0;
  int64_t token_in_epoch_ = 0;
  double total_wct_ = 0.0;
  double iteration_wct_ = 0.0;
  double epoch_wct_ = 0.0;
  double batch_wct_ = 0.0;
  bool operator==(const Impl&) const = default;
};

Timestamp::Timestamp() : impl_(std::make_unique<Impl>()) {}
Timestamp::~Timestamp() = default;
Timestamp::Timestamp(const Timestamp& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
Timestamp& Timestamp::operator=(const Timestamp& other) {
  *impl_ = *other.impl_;
  return *this;
}
bool Timestamp::operator==(const Timestamp& other) const { return *impl_ == *other.impl_; }

int64_t Timestamp::iteration() const { return impl_->iteration_; }
int64_t Timestamp::epoch() const { return impl_->epoch_; }
int64_t Timestamp::batch() const { return impl_->batch_; }
int64_t Timestamp::sample() const { return impl_->sample_; }
int64_t Timestamp::token() const { return impl_->token_; }
int64_t Timestamp::epoch_in_iteration() const { return impl_->epoch_in_iteration_; }
int64_t Timestamp::batch_in_epoch() const { return impl_->batch_in_epoch_; }
int64_t Timestamp::sample_in_epoch() const { return impl_->sample_in_epoch_; }
int64_t Timestamp::token_in_epoch() const { return impl_->token_in_epoch_; }
double Timestamp::total_wct() const { return impl_->total_wct_; }
double Timestamp::iteration_wct() const { return impl_->iteration_wct_; }
double Timestamp::epoch_wct() const { return impl_->epoch_wct_; }
double Timestamp::batch_wct() const { return impl_->batch_wct_; }

Time Timestamp::get(TimeUnit unit) const {
  switch (unit) {
    case TimeUnit::kIteration: return Time::from_iteration(impl_->iteration_);
    case TimeUnit::kEpoch: return Time::from_epoch(impl_->epoch_);
    case TimeUnit::kBatch: return Time::from_batch(impl_->batch_);
    case TimeUnit::kSample: return Time::from_sample(impl_->sample_);
    case TimeUnit::kToken: return Time::from_token(impl_->token_);
    case TimeUnit::kSecond: return Time::from_seconds(impl_->total_wct_);
    case TimeUnit::kDuration: break;
  }
  throw std::invalid_argument(
      "Timestamp::get: a duration is a fraction of max_duration; use State::elapsed_duration()");
}

Timestamp Timestamp::to_next_batch(int64_t samples, int64_t tokens, double seconds) const {
  Timestamp next = *this;
  next.impl_->batch_ += 1;
  next.impl_->batch_in_epoch_ += 1;
  next.impl_->sample_ += samples;
  next.impl_->sample_in_epoch_ += samples;
  next.impl_->token_ += tokens;
  next.impl_->token_in_epoch_ += tokens;
  next.impl_->total_wct_ += seconds;
  next.impl_->iteration_wct_ += seconds;
  next.impl_->epoch_wct_ += seconds;
  next.impl_->batch_wct_ = seconds;
  return next;
}

Timestamp Timestamp::to_next_epoch(double seconds) const {
  Timestamp next = *this;
  next.impl_->epoch_ += 1;
  next.impl_->epoch_in_iteration_ += 1;
  next.impl_->batch_in_epoch_ = 0;
  next.impl_->sample_in_epoch_ = 0;
  next.impl_->token_in_epoch_ = 0;
  next.impl_->total_wct_ += seconds;
  next.impl_->iteration_wct_ += seconds;
  next.impl_->epoch_wct_ = 0.0;
  next.impl_->batch_wct_ = 0.0;
  return next;
}

Timestamp Timestamp::to_next_iteration(double seconds) const {
  Timestamp next = *this;
  next.impl_->iteration_ += 1;
  next.impl_->epoch_in_iteration_ = 0;
  next.impl_->batch_in_epoch_ = 0;
  next.impl_->sample_in_epoch_ = 0;
  next.impl_->token_in_epoch_ = 0;
  next.impl_->total_wct_ += seconds;
  next.impl_->iteration_wct_ = 0.0;
  next.impl_->epoch_wct_ = 0.0;
  next.impl_->batch_wct_ = 0.0;
  return next;
}

std::string Timestamp::to_string() const {
  return "[ep=" + std::to_string(impl_->epoch_) + "][ba=" + std::to_string(impl_->batch_) +
         "][sp=" + std::to_string(impl_->sample_) + "]";
}

// clang-format off
#define BATON_TIMESTAMP_FIELDS(X) \
  X(iteration) X(epoch) X(batch) X(sample) X(token) X(epoch_in_iteration) X(batch_in_epoch) \
  X(sample_in_epoch) X(token_in_epoch) X(total_wct) X(iteration_wct) X(epoch_wct) X(batch_wct)
// clang-format on

nlohmann::json Timestamp::state_dict() const {
  nlohmann::json out = nlohmann::json::object();
#define BATON_SAVE(field) out[#field] = impl_->field##_;
  BATON_TIMESTAMP_FIELDS(BATON_SAVE)
#undef BATON_SAVE
  return out;
}

void Timestamp::load_state_dict(const nlohmann::json& state) {
  if (!state.is_object()) throw std::invalid_argument("timestamp state: expected a JSON object, got " + state.dump());
  Timestamp loaded;
#define BATON_LOAD(field)                                                                          \
  {                                                                                                \
    auto it = state.find(#field);                                                                  \
    if (it == state.end() || !it->is_number()) {                                                   \
      throw std::invalid_argument("timestamp state: key '" #field "' is missing or not a number"); \
    }                                                                                              \
    it->get_to(loaded.impl_->field##_);                                                            \
  }
  BATON_TIMESTAMP_FIELDS(BATON_LOAD)
#undef BATON_LOAD
  *this = loaded;
}

}  // namespace baton
