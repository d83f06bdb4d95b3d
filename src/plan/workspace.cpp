#include "baton/plan/workspace.h"

#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <torch/torch.h>

namespace baton {

struct Workspace::Impl {
  std::shared_ptr<Workspace> parent_;
  mutable std::shared_mutex mutex_;
  std::map<std::string, WorkspaceValue> values_;
};

Workspace::Workspace() : impl_(std::make_unique<Impl>()) {}
Workspace::~Workspace() = default;

const std::shared_ptr<Workspace>& Workspace::parent() const { return impl_->parent_; }

std::shared_ptr<Workspace> Workspace::create() { return std::shared_ptr<Workspace>(new Workspace()); }

std::shared_ptr<Workspace> Workspace::child() {
  auto c = create();
  c->impl_->parent_ = shared_from_this();
  return c;
}

void Workspace::set(const std::string& name, WorkspaceValue value) {
  std::unique_lock lock(impl_->mutex_);
  impl_->values_[name] = std::move(value);
}

std::optional<WorkspaceValue> Workspace::get(const std::string& name) const {
  for (const Workspace* w = this; w; w = w->impl_->parent_.get()) {
    std::shared_lock lock(w->impl_->mutex_);
    auto it = w->impl_->values_.find(name);
    if (it != w->impl_->values_.end()) return it->second;
  }
  return std::nullopt;
}

namespace {

const char* type_name(const WorkspaceValue& v) {
  switch (v.index()) {
    case 0: return "a double";
    case 1: return "an integer";
    case 2: return "a boolean";
    case 3: return "a string";
    default: return "a tensor";
  }
}

template <typename T>
T typed(const Workspace& ws, const std::string& name, const char* want) {
  auto v = ws.get(name);
  if (!v) throw std::out_of_range("workspace has no value '" + name + "'");
  if (const T* t = std::get_if<T>(&*v)) return *t;
  if constexpr (std::is_same_v<T, double>) {
    if (const auto* i = std::get_if<int64_t>(&*v)) return static_cast<double>(*i);
  }
  throw std::invalid_argument("workspace value '" + name + "' is " + type_name(*v) + ", not " + want);
}

}  // namespace

double Workspace::get_double(const std::string& name) const { return typed<double>(*this, name, "a number"); }
int64_t Workspace::get_int(const std::string& name) const { return typed<int64_t>(*this, name, "an integer"); }
bool Workspace::get_bool(const std::string& name) const { return typed<bool>(*this, name, "a boolean"); }
std::string Workspace::get_string(const std::string& name) const { return typed<std::string>(*this, name, "a string"); }
at::Tensor Workspace::get_tensor(const std::string& name) const { return typed<at::Tensor>(*this, name, "a tensor"); }

void Workspace::update(const std::string& name,
                       const std::function<WorkspaceValue(std::optional<WorkspaceValue>)>& update) {
  Workspace* owner = this;
  for (Workspace* w = this; w; w = w->impl_->parent_.get()) {
    std::shared_lock lock(w->impl_->mutex_);
    if (w->impl_->values_.count(name)) {
      owner = w;
      break;
    }
  }
  std::unique_lock lock(owner->impl_->mutex_);
  auto it = owner->impl_->values_.find(name);
  std::optional<WorkspaceValue> current;
  if (it != owner->impl_->values_.end()) current = it->second;
  owner->impl_->values_[name] = update(std::move(current));
}

double Workspace::add(const std::string& name, double delta) {
  double result = 0;
  update(name, [&](std::optional<WorkspaceValue> v) -> WorkspaceValue {
    double x = 0;
    if (v) {
      if (const auto* d = std::get_if<double>(&*v))
        x = *d;
      else if (const auto* i = std::get_if<int64_t>(&*v))
        x = static_cast<double>(*i);
      else
        throw std::invalid_argument("workspace value '" + name + "' is " + type_name(*v) + ", not a number");
    }
    result = x + delta;
    return result;
  });
  return result;
}

std::vector<std::string> Workspace::names() const {
  std::shared_lock lock(impl_->mutex_);
  std::vector<std::string> out;
  for (const auto& [k, v] : impl_->values_) out.push_back(k);
  return out;
}

bool Workspace::erase(const std::string& name) {
  std::unique_lock lock(impl_->mutex_);
  return impl_->values_.erase(name) > 0;
}

std::string to_string(const WorkspaceValue& value) {
  std::ostringstream s;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, at::Tensor>) {
          s << "tensor" << v.sizes();
        } else if constexpr (std::is_same_v<T, bool>) {
          s << (v ? "true" : "false");
        } else {
          s << v;
        }
      },
      value);
  return s.str();
}

namespace {

const std::vector<std::pair<at::ScalarType, const char*>>& dtype_names() {
  static const std::vector<std::pair<at::ScalarType, const char*>> names = {
      {at::kFloat, "float32"}, {at::kDouble, "float64"}, {at::kHalf, "float16"}, {at::kBFloat16, "bfloat16"},
      {at::kLong, "int64"},    {at::kInt, "int32"},      {at::kShort, "int16"},  {at::kChar, "int8"},
      {at::kByte, "uint8"},    {at::kBool, "bool"}};
  return names;
}

nlohmann::json tensor_to_json(const at::Tensor& t) {
  const char* dtype = nullptr;
  for (const auto& [type, name] : dtype_names()) {
    if (type == t.scalar_type()) dtype = name;
  }
  if (!dtype)
    throw std::invalid_argument(std::string("workspace value: a tensor of dtype ") + c10::toString(t.scalar_type()) +
                                " cannot be sent (use a real or integer dtype)");
  auto flat = t.detach().to(torch::kCPU).contiguous().reshape({-1});
  nlohmann::json data = nlohmann::json::array();
  if (t.is_floating_point()) {
    auto d = flat.to(torch::kDouble);
    const double* p = d.data_ptr<double>();
    for (int64_t i = 0; i < d.numel(); ++i) data.push_back(p[i]);
  } else if (t.scalar_type() == at::kBool) {
    const bool* p = flat.data_ptr<bool>();
    for (int64_t i = 0; i < flat.numel(); ++i) data.push_back(p[i]);
  } else {
    auto l = flat.to(torch::kLong);
    const int64_t* p = l.data_ptr<int64_t>();
    for (int64_t i = 0; i < l.numel(); ++i) data.push_back(p[i]);
  }
  return {{"dtype", dtype}, {"shape", t.sizes().vec()}, {"data", std::move(data)}};
}

at::Tensor tensor_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("dtype") || !j.contains("shape") || !j.contains("data") || !j["data"].is_array())
    throw std::invalid_argument("workspace value: a tensor needs dtype, shape and data");
  const auto name = j["dtype"].get<std::string>();
  std::optional<at::ScalarType> type;
  for (const auto& [t, n] : dtype_names()) {
    if (name == n) type = t;
  }
  if (!type) throw std::invalid_argument("workspace value: unknown tensor dtype '" + name + "'");
  const auto shape = j["shape"].get<std::vector<int64_t>>();
  at::Tensor flat;
  if (*type == at::kBool) {
    auto v = j["data"].get<std::vector<bool>>();
    flat = torch::empty({static_cast<int64_t>(v.size())}, torch::kBool);
    for (std::size_t i = 0; i < v.size(); ++i) flat.data_ptr<bool>()[i] = v[i];
  } else if (at::isFloatingType(*type)) {
    flat = torch::tensor(j["data"].get<std::vector<double>>(), torch::kDouble).to(*type);
  } else {
    flat = torch::tensor(j["data"].get<std::vector<int64_t>>(), torch::kLong).to(*type);
  }
  int64_t numel = 1;
  for (auto d : shape) numel *= d;
  if (numel != flat.numel()) throw std::invalid_argument("workspace value: a tensor's data does not match its shape");
  return flat.reshape(shape);
}

nlohmann::json tensor_to_plain(const at::Tensor& t) {
  const auto j = tensor_to_json(t);
  const auto& data = j["data"];
  const auto shape = j["shape"].get<std::vector<int64_t>>();
  std::size_t next = 0;
  std::function<nlohmann::json(std::size_t)> nest = [&](std::size_t dim) -> nlohmann::json {
    if (dim == shape.size()) return data[next++];
    nlohmann::json a = nlohmann::json::array();
    for (int64_t i = 0; i < shape[dim]; ++i) a.push_back(nest(dim + 1));
    return a;
  };
  return nest(0);
}

}  // namespace

nlohmann::json value_to_json(const WorkspaceValue& value) {
  return std::visit(
      [](const auto& v) -> nlohmann::json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>)
          return {{"d", v}};
        else if constexpr (std::is_same_v<T, int64_t>)
          return {{"i", v}};
        else if constexpr (std::is_same_v<T, bool>)
          return {{"b", v}};
        else if constexpr (std::is_same_v<T, std::string>)
          return {{"s", v}};
        else
          return {{"t", tensor_to_json(v)}};
      },
      value);
}

WorkspaceValue value_from_json(const nlohmann::json& j) {
  try {
    if (j.is_object() && j.size() == 1) {
      const auto it = j.begin();
      const std::string& key = it.key();
      const auto& v = it.value();
      if (key == "d") return v.get<double>();
      if (key == "i") return v.get<int64_t>();
      if (key == "b") return v.get<bool>();
      if (key == "s") return v.get<std::string>();
      if (key == "t") return tensor_from_json(v);
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("workspace value: ") + e.what());
  }
  throw std::invalid_argument("workspace value: expected one of d, i, b, s, t, got " + j.dump().substr(0, 80));
}

nlohmann::json value_to_plain_json(const WorkspaceValue& value) {
  if (const auto* t = std::get_if<at::Tensor>(&value)) return tensor_to_plain(*t);
  return value_to_json(value).begin().value();
}

}  // namespace baton
