// Options, written one way: an `XxxOptions` is a builder whose options are declared with BATON_ARG
// (LibTorch's TORCH_ARG), each default written once and documented in place:
//
//   baton::DataLoaderOptions().batch_size(128).seed(17)
//   baton::MixOptions().alpha(0.4)
//
// OptionReader reads the options of a named component (an algorithm, a callback) given as JSON, as a
// recipe gives them, into such options: typed, their defaults kept, every key accounted for.
//
//   baton::OptionReader o("mixup", json);
//   baton::MixOptions mix;         // the defaults
//   o.read("alpha", mix.alpha());  // the recipe's value, if it gives one
//   o.finish();                    // throws OptionError for a key no getter asked for
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/time.h"

// A builder option: `name(value)` sets it and returns the options, `name()` reads it.
#define BATON_ARG(T, name)                           \
 public:                                             \
  auto& name(T value) {                              \
    name##_ = std::move(value);                      \
    return *this;                                    \
  }                                                  \
  const T& name() const noexcept { return name##_; } \
  T& name() noexcept { return name##_; }             \
                                                     \
 private:                                            \
  T name##_

namespace baton {

// An option that is unknown or has a bad value; key() names it, so a recipe can point at its line.
// what() starts with "<owner>.<key>: ".
class OptionError : public std::invalid_argument {
 public:
  OptionError(std::string key, const std::string& message) : std::invalid_argument(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// "a, b, c": names as every message lists them.
inline std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The one message for a name that is not one of `known`: "unknown <kind> 'x' (known: a, b, c)".
inline std::string unknown_name(const std::string& kind, const std::string& name,
                                const std::vector<std::string>& known) {
  return "unknown " + kind + " '" + name + "' (known: " + (known.empty() ? "none" : join_names(known)) + ")";
}

class OptionReader {
 public:
  OptionReader(std::string owner, const nlohmann::json& json) : owner_(std::move(owner)), json_(json) {
    if (!json_.is_null() && !json_.is_object()) {
      throw OptionError("", owner_ + ": expected a mapping of options, got " + json_.dump());
    }
  }

  double number(const std::string& key, double fallback) {
    return get(key, fallback, "a number", &nlohmann::json::is_number);
  }
  int64_t integer(const std::string& key, int64_t fallback) {
    return get(key, fallback, "a whole number", &nlohmann::json::is_number_integer);
  }
  bool boolean(const std::string& key, bool fallback) {
    return get(key, fallback, "true or false", &nlohmann::json::is_boolean);
  }
  std::string text(const std::string& key, const std::string& fallback) {
    return get(key, fallback, "a string", &nlohmann::json::is_string);
  }
  std::optional<double> optional_number(const std::string& key) {
    known_.push_back(key);
    if (!present(key)) return std::nullopt;
    return number(key, 0.0);
  }
  Time time(const std::string& key, Time fallback) {
    known_.push_back(key);
    if (!present(key)) return fallback;
    const nlohmann::json& v = json_[key];
    if (!v.is_string()) fail(key, "expected a time such as 50ba, 1ep or 0.5dur, got " + v.dump());
    try {
      return Time::parse(v.get<std::string>());
    } catch (const std::invalid_argument& e) {
      fail(key, e.what());
    }
  }

  // Reads `key` into `field`, which keeps its value when the key is absent: the defaults are the
  // options struct's, written once where they are documented.
  void read(const std::string& key, double& field) { field = number(key, field); }
  void read(const std::string& key, int64_t& field) { field = integer(key, field); }
  void read(const std::string& key, bool& field) { field = boolean(key, field); }
  void read(const std::string& key, std::string& field) { field = text(key, field); }
  void read(const std::string& key, Time& field) { field = time(key, field); }
  void read(const std::string& key, std::optional<double>& field) {
    if (auto v = optional_number(key)) field = v;
  }
  // With bounds: a whole number from `least` to `most`; a finite number above `above` and at most
  // `at_most`.
  void read(const std::string& key, int& field, int64_t least, int64_t most) {
    known_.push_back(key);
    if (!present(key)) return;
    const nlohmann::json& v = json_[key];
    if (!v.is_number_integer() || v.get<int64_t>() < least || v.get<int64_t>() > most) {
      fail(key, "expected a whole number from " + std::to_string(least) + " to " + std::to_string(most) + ", got " +
                    v.dump());
    }
    field = static_cast<int>(v.get<int64_t>());
  }
  void read(const std::string& key, double& field, double above, double at_most) {
    known_.push_back(key);
    if (!present(key)) return;
    const nlohmann::json& v = json_[key];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || !(v.get<double>() > above) ||
        !(v.get<double>() <= at_most)) {
      fail(key, "expected a number > " + nlohmann::json(above).dump() +
                    (std::isfinite(at_most) ? " and <= " + nlohmann::json(at_most).dump() : std::string()) + ", got " +
                    v.dump());
    }
    field = v.get<double>();
  }

  // Throws for a key no getter asked for.
  void finish() const {
    if (!json_.is_object()) return;
    for (const auto& [key, value] : json_.items()) {
      if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
      throw OptionError(
          key, owner_ + "." + key + ": unknown option (known: " + (known_.empty() ? "none" : join_names(known_)) + ")");
    }
  }

 private:
  bool present(const std::string& key) const {
    return json_.is_object() && json_.contains(key) && !json_[key].is_null();
  }
  template <typename T>
  T get(const std::string& key, T fallback, const char* what, bool (nlohmann::json::*check)() const noexcept) {
    known_.push_back(key);
    if (!present(key)) return fallback;
    const nlohmann::json& v = json_[key];
    if (!(v.*check)()) fail(key, std::string("expected ") + what + ", got " + v.dump());
    return v.get<T>();
  }
  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw OptionError(key, owner_ + "." + key + ": " + why);
  }

  std::string owner_;
  nlohmann::json json_;
  std::vector<std::string> known_;
};

}  // namespace baton
