#include "baton/core/options.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace baton {

std::string trimmed(std::string_view text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return std::string(text);
}

namespace {

// Edits (insert, delete, replace, swap two neighbours) from `a` to `b`, case aside.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const auto same = [&](std::size_t i, std::size_t j) {
    return std::tolower(static_cast<unsigned char>(a[i])) == std::tolower(static_cast<unsigned char>(b[j]));
  };
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (same(i - 1, j - 1) ? 0 : 1)});
      if (i > 1 && j > 1 && same(i - 1, j - 2) && same(i - 2, j - 1)) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string closest_name(std::string_view name, const std::vector<std::string>& known) {
  if (name.size() > 256) return {};  // not a typo; and the distance grows with the square
  const std::size_t most = std::max<std::size_t>(1, name.size() / 3);
  std::string best;
  std::size_t best_distance = most + 1;
  for (const std::string& k : known) {
    if (k == name || k.size() > name.size() + most || name.size() > k.size() + most) continue;
    if (const std::size_t d = edit_distance(name, k); d < best_distance) best = k, best_distance = d;
  }
  return best;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& known) {
  const std::string close = closest_name(name, known);
  return close.empty() ? std::string() : "; did you mean '" + close + "'?";
}

struct OptionReader::Impl {
  std::vector<std::string> path_;
  nlohmann::json json_;
  std::shared_ptr<const OptionOrigin> origin_;
  std::vector<std::string> known_;
};

OptionReader::~OptionReader() = default;
OptionReader::OptionReader(OptionReader&&) noexcept = default;
OptionReader& OptionReader::operator=(OptionReader&&) noexcept = default;

const nlohmann::json* OptionReader::take(const std::string& key) {
  impl_->known_.push_back(key);
  return has(key) ? &impl_->json_[key] : nullptr;
}

const nlohmann::json& OptionReader::json() const { return impl_->json_; }

OptionReader::OptionReader(std::string owner, const nlohmann::json& json)
    : OptionReader(std::vector<std::string>{std::move(owner)}, json, nullptr) {}

OptionReader::OptionReader(const nlohmann::json& json, std::shared_ptr<const OptionOrigin> origin)
    : OptionReader(std::vector<std::string>{}, json, std::move(origin)) {}

OptionReader::OptionReader(std::vector<std::string> path, const nlohmann::json& json,
                           std::shared_ptr<const OptionOrigin> origin)
    : impl_(std::make_unique<Impl>()) {
  impl_->path_ = std::move(path);
  impl_->json_ = json;
  impl_->origin_ = std::move(origin);
  if (!impl_->json_.is_null() && !impl_->json_.is_object()) {
    raise("", false, dotted(), "expected a mapping of keys to values, got '" + shown(impl_->json_) + "'");
  }
}

OptionReader OptionReader::child(const std::string& key) const {
  return OptionReader(path_to(key), has(key) ? impl_->json_[key] : nlohmann::json(), impl_->origin_);
}

OptionReader OptionReader::read_child(const std::string& key) {
  impl_->known_.push_back(key);
  return child(key);
}

bool OptionReader::has(const std::string& key) const {
  return impl_->json_.is_object() && impl_->json_.contains(key) && !impl_->json_[key].is_null();
}

std::vector<std::string> OptionReader::keys() const {
  std::vector<std::string> out = impl_->origin_ ? impl_->origin_->order(impl_->path_) : std::vector<std::string>{};
  if (!out.empty() || !impl_->json_.is_object()) return out;
  for (const auto& item : impl_->json_.items()) out.push_back(item.key());
  return out;
}

std::string OptionReader::dotted(const std::string& key) const {
  std::string out;
  for (const auto& part : impl_->path_) out += (out.empty() ? "" : ".") + part;
  if (!key.empty()) out += (out.empty() ? "" : ".") + key;
  return out;
}

std::vector<std::string> OptionReader::path_to(const std::string& key) const {
  std::vector<std::string> path = impl_->path_;
  path.push_back(key);
  return path;
}

void OptionReader::raise(const std::string& key, bool at_key, const std::string& subject,
                         const std::string& why) const {
  const std::string where =
      impl_->origin_ ? impl_->origin_->where(key.empty() ? impl_->path_ : path_to(key), at_key) : "";
  // A place that names the value already ("--set a.b") is not followed by its path again.
  const bool named = !subject.empty() && where.size() > subject.size() &&
                     where.compare(where.size() - subject.size() - 1, std::string::npos, " " + subject) == 0;
  std::string message = where;
  for (const std::string* part : {&subject, &why}) {
    if (!part->empty() && !(named && part == &subject)) message += (message.empty() ? "" : ": ") + *part;
  }
  if (impl_->origin_) impl_->origin_->raise(key, message);
  throw OptionError(key, message);
}

void OptionReader::fail(const std::string& key, const std::string& why) const { raise(key, false, dotted(key), why); }

void OptionReader::fail_at_key(const std::string& key, const std::string& why) const {
  raise(key, true, dotted(key), why);
}

void OptionReader::fail_self(const std::string& why, const std::string& key) const {
  raise(has(key) ? key : "", false, dotted(), why);
}

Time OptionReader::time(const std::string& key, Time fallback, bool zero_means_none) {
  impl_->known_.push_back(key);
  if (!has(key)) return fallback;
  const nlohmann::json& v = impl_->json_[key];
  if (zero_means_none && ((v.is_number() && v.get<double>() == 0) || v == "0" || v == "0.0")) {
    return Time::from_epoch(0);
  }
  return parse_time(key, v);
}

bool OptionReader::to_bool(const std::string& key, const nlohmann::json& v) const {
  if (!v.is_boolean()) wrong_type(key, "true or false", v);
  return v.get<bool>();
}

int64_t OptionReader::to_integer(const std::string& key, const nlohmann::json& v, int64_t least, uint64_t most) const {
  if (!v.is_number_integer()) wrong_type(key, "a whole number", v);
  if (v.is_number_unsigned()) {  // 0 to 2^64 - 1, read exactly (the caller casts it back)
    if (v.get<uint64_t>() > most) wrong_type(key, "a whole number that fits", v);
    return static_cast<int64_t>(v.get<uint64_t>());
  }
  const auto n = v.get<int64_t>();
  if (n < least || (n > 0 && static_cast<uint64_t>(n) > most)) wrong_type(key, "a whole number that fits", v);
  return n;
}

double OptionReader::to_number(const std::string& key, const nlohmann::json& v) const {
  if (!v.is_number()) wrong_type(key, "a number", v);
  if (!std::isfinite(v.get<double>())) wrong_type(key, "a finite number", v);  // no setting is NaN
  return v.get<double>();
}

std::string OptionReader::to_text(const std::string& key, const nlohmann::json& v) const {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_structured() || v.is_null()) wrong_type(key, "a string", v);
  return shown(v);  // a number or true/false where text is wanted: as written
}

const std::string& OptionReader::to_enum_name(const std::string& key, const nlohmann::json& v,
                                              const std::vector<std::string>& names) const {
  if (v.is_string()) {
    const auto it = std::find(names.begin(), names.end(), v.get<std::string>());
    if (it != names.end()) return *it;
  }
  wrong_type(key, either_of(names).c_str(), v);
}

const nlohmann::json& OptionReader::to_list(const std::string& key, const nlohmann::json& v) const {
  if (!v.is_array()) wrong_type(key, "a list", v);
  return v;
}

Time OptionReader::parse_time(const std::string& key, const nlohmann::json& v) const {
  if (!v.is_string()) wrong_type(key, "a time such as 50ba, 1ep or 0.5dur", v);
  try {
    return Time::parse(v.get<std::string>());
  } catch (const std::invalid_argument& e) {
    fail(key, e.what());
  }
}

void OptionReader::read(const std::string& key, int& field, int64_t least, int64_t most) {
  impl_->known_.push_back(key);
  if (!has(key)) return;
  const nlohmann::json& v = impl_->json_[key];
  if (!v.is_number_integer() || v.get<int64_t>() < least || v.get<int64_t>() > most) {
    wrong_type(key, ("a whole number from " + std::to_string(least) + " to " + std::to_string(most)).c_str(), v);
  }
  field = static_cast<int>(v.get<int64_t>());
}

void OptionReader::read(const std::string& key, double& field, double above, double at_most) {
  impl_->known_.push_back(key);
  if (!has(key)) return;
  const nlohmann::json& v = impl_->json_[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || !(v.get<double>() > above) ||
      !(v.get<double>() <= at_most)) {
    const std::string range = "a number > " + nlohmann::json(above).dump() +
                              (std::isfinite(at_most) ? " and <= " + nlohmann::json(at_most).dump() : "");
    wrong_type(key, range.c_str(), v);
  }
  field = v.get<double>();
}

void OptionReader::check_keys(const std::vector<std::string>& known) const {
  for (const std::string& key : keys()) {  // in written order: the first typo is the one reported
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string in = impl_->path_.empty() ? "" : " in " + dotted();
    raise(key, true, "",
          "unknown key '" + dotted(key) + "' (known" + in + ": " + join_names(known) + ")" + did_you_mean(key, known));
  }
}

void OptionReader::finish() const {
  if (!impl_->json_.is_object()) return;
  for (const auto& item : impl_->json_.items()) {
    if (std::find(impl_->known_.begin(), impl_->known_.end(), item.key()) != impl_->known_.end()) continue;
    fail_at_key(item.key(), "unknown option (known: " + (impl_->known_.empty() ? "none" : join_names(impl_->known_)) +
                                ")" + did_you_mean(item.key(), impl_->known_));
  }
}

std::string OptionReader::shown(const nlohmann::json& value) {
  std::string out;
  if (value.is_string()) {
    out = value.get<std::string>();
  } else if (value.is_number_float() && !std::isfinite(value.get<double>())) {
    const double d = value.get<double>();
    out = std::isnan(d) ? ".nan" : d > 0 ? ".inf" : "-.inf";  // as YAML writes them (JSON cannot)
  } else {
    out = value.dump();
  }
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (out.size() > 80) out = out.substr(0, 77) + "...";
  return out;
}

}  // namespace baton
