// Options, written one way: an `XxxOptions` is a builder whose options are declared with BATON_ARG
// (LibTorch's TORCH_ARG), each default written once and documented in place:
//
//   baton::DataLoaderOptions().batch_size(128).seed(17)
//   baton::MixOptions().alpha(0.4)
//
// OptionReader reads a mapping of options into such options: typed, their defaults kept, every key
// accounted for. It is the one reader of options: a named component's (an algorithm, a callback, a
// strategy) given as JSON, and a recipe's sections (whose OptionOrigin names file, line and column).
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
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
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

// `text` without its leading and trailing whitespace (what a user's file or flag adds around a value).
std::string trimmed(std::string_view text);

// "a, b, c": names as every message lists them (or with another separator: "a,b,c").
inline std::string join_names(const std::vector<std::string>& names, const char* separator = ", ") {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : separator) + n;
  return out;
}

// The name of `known` a typo of `name` most likely meant (edit distance at most a third of its
// length, at least 1, ties to the first), or "" when none is that close.
std::string closest_name(std::string_view name, const std::vector<std::string>& known);

// "; did you mean 'x'?" for a name close to one of `known`, else "".
std::string did_you_mean(std::string_view name, const std::vector<std::string>& known);

// The one message for a name that is not one of `known`: "unknown <kind> 'x' (known: a, b, c)",
// with "; did you mean 'y'?" after it when `name` is a typo of one of them.
inline std::string unknown_name(const std::string& kind, const std::string& name,
                                const std::vector<std::string>& known) {
  return "unknown " + kind + " '" + name + "' (known: " + (known.empty() ? "none" : join_names(known)) + ")" +
         did_you_mean(name, known);
}

// "a, b or c": the choices of a closed set, as a message lists them.
inline std::string either_of(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return out;
}

// A closed set of names is an enum class in C++, and the names a recipe writes for its values are
// declared once, next to it; OptionReader reads such an enum by name, and to_name() writes it:
//
//   enum class ClippingType { kNorm, kValue, kAdaptive };
//   BATON_ENUM_NAMES(ClippingType, {ClippingType::kNorm, "norm"}, {ClippingType::kValue, "value"},
//                    {ClippingType::kAdaptive, "adaptive"})
template <typename E>
using EnumNames = std::vector<std::pair<E, std::string>>;

#define BATON_ENUM_NAMES(E, ...)                              \
  inline const ::baton::EnumNames<E>& enum_names(E) {         \
    static const ::baton::EnumNames<E> names = {__VA_ARGS__}; \
    return names;                                             \
  }

template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
std::vector<std::string> names_of() {
  std::vector<std::string> out;
  for (const auto& entry : enum_names(E{})) out.push_back(entry.second);
  return out;
}

// The name of `value` (as a recipe writes it).
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
const std::string& to_name(E value) {
  for (const auto& [e, name] : enum_names(value)) {
    if (e == value) return name;
  }
  throw std::logic_error("an enum value without a name");
}

// The value named `name`, or nullopt.
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
std::optional<E> from_name(const std::string& name) {
  for (const auto& [e, n] : enum_names(E{})) {
    if (n == name) return e;
  }
  return std::nullopt;
}

// Where the values an OptionReader reads were written, for its messages (a recipe file's line and
// column, a --set flag), and the error its refusals throw. Without one, a message names the value's
// dotted path ("mixup.alpha: ...") and the error is an OptionError.
class OptionOrigin {
 public:
  virtual ~OptionOrigin() = default;
  // "FILE:LINE:COL" or "--set a.b" for the value at `path` (its key, when `at_key`), or "" when the
  // path is all there is to say.
  virtual std::string where(const std::vector<std::string>& path, bool at_key) const = 0;
  // The keys of the mapping at `path` in the order they were written, or {} to take the JSON
  // object's (sorted) order.
  virtual std::vector<std::string> order(const std::vector<std::string>& path) const {
    (void)path;
    return {};
  }
  // Throws the error of these options; `key` is the refused key (empty for the options themselves).
  [[noreturn]] virtual void raise(const std::string& key, const std::string& message) const {
    throw OptionError(key, message);
  }
};

// Reads a mapping of options (a component's, or a recipe's section) into typed values: the defaults
// kept, every value checked (a number finite, a whole number whole), and every key accounted for,
// either against a list (check_keys) or by the keys read (finish). Messages say where the value is,
// its dotted path, and why: "r.yaml:3:7: optimizer.lr: expected a finite number, got '.nan'".
class OptionReader {
 public:
  ~OptionReader();
  OptionReader(OptionReader&&) noexcept;
  OptionReader& operator=(OptionReader&&) noexcept;
  // A component's options: `owner` names them in messages ("mixup.alpha: ...").
  OptionReader(std::string owner, const nlohmann::json& json);
  // A document's options, rooted at its top, with where its values were written.
  OptionReader(const nlohmann::json& json, std::shared_ptr<const OptionOrigin> origin);

  // The mapping under `key` (null when absent), read with the same origin.
  OptionReader child(const std::string& key) const;
  // The same, with `key` counted as read (a nested mapping among a component's options).
  OptionReader read_child(const std::string& key);

  bool has(const std::string& key) const;
  const nlohmann::json& json() const;
  // The keys, in the order they were written (the JSON object's sorted order without an origin).
  std::vector<std::string> keys() const;
  // The dotted path of `key` ("data.batch_size"), or of these options with no key.
  std::string dotted(const std::string& key = "") const;

  // `fallback` when the key is absent; otherwise the value, checked for its type T: bool, a whole
  // number (that fits T), a floating-point number (finite), std::string (any single value, as
  // written), Time, or a std::vector of those.
  template <typename T>
  T get(const std::string& key, T fallback) {
    const nlohmann::json* value = take(key);
    return value == nullptr ? fallback : convert<T>(key, *value);
  }
  // Reads `key` into `field`, which keeps its value when the key is absent: the defaults are the
  // options struct's, written once where they are documented.
  template <typename T>
  void read(const std::string& key, T& field) {
    field = get<T>(key, field);
  }
  double number(const std::string& key, double fallback) { return get<double>(key, fallback); }
  int64_t integer(const std::string& key, int64_t fallback) { return get<int64_t>(key, fallback); }
  bool boolean(const std::string& key, bool fallback) { return get<bool>(key, fallback); }
  std::string text(const std::string& key, const std::string& fallback) { return get<std::string>(key, fallback); }
  std::optional<double> optional_number(const std::string& key) {
    const nlohmann::json* value = take(key);
    if (value == nullptr) return std::nullopt;
    return convert<double>(key, *value);
  }
  // An optional option: set when the key is given, kept (often unset) when not.
  template <typename T>
  void read(const std::string& key, std::optional<T>& field) {
    if (const nlohmann::json* value = take(key)) field = convert<T>(key, *value);
  }
  // A time such as 50ba, 1ep or 0.5dur; with `zero_means_none`, 0 is 0ep (never).
  Time time(const std::string& key, Time fallback, bool zero_means_none = false);
  // With bounds: a whole number from `least` to `most`; a finite number above `above` and at most
  // `at_most`.
  void read(const std::string& key, int& field, int64_t least, int64_t most);
  void read(const std::string& key, double& field, double above, double at_most);

  // Throws, naming where `key`'s value is (or these options', when it is absent) and its path.
  [[noreturn]] void fail(const std::string& key, const std::string& why) const;
  // As fail(), pointing at the key itself (a name that is wrong, whatever its value).
  [[noreturn]] void fail_at_key(const std::string& key, const std::string& why) const;
  // A refusal of these options as a whole ("mixup: alpha must be positive"), pointing at `key`'s
  // value when it is given.
  [[noreturn]] void fail_self(const std::string& why, const std::string& key = "") const;

  // Throws for a key that is not one of `known` (before any is read: a typo fails first).
  void check_keys(const std::vector<std::string>& known) const;
  // Throws for a key no getter asked for.
  void finish() const;

  // A value as a message shows it: one line, at most 80 characters; a string as written, unquoted.
  static std::string shown(const nlohmann::json& value);

 private:
  OptionReader(std::vector<std::string> path, const nlohmann::json& json, std::shared_ptr<const OptionOrigin> origin);
  std::vector<std::string> path_to(const std::string& key) const;
  [[noreturn]] void raise(const std::string& key, bool at_key, const std::string& subject,
                          const std::string& why) const;
  [[noreturn]] void wrong_type(const std::string& key, const char* expected, const nlohmann::json& v) const {
    fail(key, std::string("expected ") + expected + ", got '" + shown(v) + "'");
  }

  // One value, checked for its type (the messages name the key and the value).
  bool to_bool(const std::string& key, const nlohmann::json& v) const;
  // A whole number from `least` to `most`.
  int64_t to_integer(const std::string& key, const nlohmann::json& v, int64_t least, uint64_t most) const;
  double to_number(const std::string& key, const nlohmann::json& v) const;
  std::string to_text(const std::string& key, const nlohmann::json& v) const;
  // An enum's name: its value, or an error listing the names.
  const std::string& to_enum_name(const std::string& key, const nlohmann::json& v,
                                  const std::vector<std::string>& names) const;
  const nlohmann::json& to_list(const std::string& key, const nlohmann::json& v) const;

  template <typename T>
  T convert(const std::string& key, const nlohmann::json& v) const;
  Time parse_time(const std::string& key, const nlohmann::json& v) const;
  // Notes `key` as read (for the unknown-key check); its value, or null when absent.
  const nlohmann::json* take(const std::string& key);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

template <typename T>
T OptionReader::convert(const std::string& key, const nlohmann::json& v) const {
  if constexpr (std::is_same_v<T, bool>) {
    return to_bool(key, v);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(to_integer(key, v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(to_number(key, v));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return to_text(key, v);
  } else if constexpr (std::is_same_v<T, Time>) {
    return parse_time(key, v);
  } else if constexpr (std::is_enum_v<T>) {
    return *from_name<T>(to_enum_name(key, v, names_of<T>()));
  } else {
    static_assert(std::is_same_v<T, std::vector<typename T::value_type>>, "an option is a value or a list");
    T out;
    for (const auto& item : to_list(key, v)) out.push_back(convert<typename T::value_type>(key, item));
    return out;
  }
}

}  // namespace baton
