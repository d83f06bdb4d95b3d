#include "baton/plan/workspace.h"

#include <mutex>
#include <sstream>
#include <stdexcept>

namespace baton {

std::shared_ptr<Workspace> Workspace::create() { return std::shared_ptr<Workspace>(new Workspace()); }

std::shared_ptr<Workspace> Workspace::child() {
  auto c = create();
  c->parent_ = shared_from_this();
  return c;
}

void Workspace::set(const std::string& name, WorkspaceValue value) {
  std::unique_lock lock(mutex_);
  values_[name] = std::move(value);
}

std::optional<WorkspaceValue> Workspace::get(const std::string& name) const {
  for (const Workspace* w = this; w; w = w->parent_.get()) {
    std::shared_lock lock(w->mutex_);
    auto it = w->values_.find(name);
    if (it != w->values_.end()) return it->second;
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
  for (Workspace* w = this; w; w = w->parent_.get()) {
    std::shared_lock lock(w->mutex_);
    if (w->values_.count(name)) {
      owner = w;
      break;
    }
  }
  std::unique_lock lock(owner->mutex_);
  auto it = owner->values_.find(name);
  std::optional<WorkspaceValue> current;
  if (it != owner->values_.end()) current = it->second;
  owner->values_[name] = update(std::move(current));
}

double Workspace::add(const std::string& name, double delta) {
  double result = 0;
  update(name, [&](std::optional<WorkspaceValue> v) -> WorkspaceValue {
    double x = 0;
    if (v) {
      if (const auto* d = std::get_if<double>(&*v)) x = *d;
      else if (const auto* i = std::get_if<int64_t>(&*v)) x = static_cast<double>(*i);
      else throw std::invalid_argument("workspace value '" + name + "' is " + type_name(*v) + ", not a number");
    }
    result = x + delta;
    return result;
  });
  return result;
}

std::vector<std::string> Workspace::names() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [k, v] : values_) out.push_back(k);
  return out;
}

bool Workspace::erase(const std::string& name) {
  std::unique_lock lock(mutex_);
  return values_.erase(name) > 0;
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

}  // namespace baton
