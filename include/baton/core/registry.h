// Registry: the one way baton names a component kind (models, optimizers, schedulers, metrics,
// algorithms, callbacks, loggers, strategies, middlewares): each name registered once with the
// function that builds it, in src/<module>/registry.cpp (or beside the kind's few members).
//
//   static const Registry<std::shared_ptr<Model>, const ModelOptions&> models =
//       Registry<std::shared_ptr<Model>, const ModelOptions&>("model")
//           .add("mlp", [](const ModelOptions& o) { return make_mlp(o); });
//   models.make("mlp", options);   // unknown: "unknown model 'x' (known: mlp, ...)"
//
// Components configured by a recipe's mapping of options take an OptionReader (make_configured):
// each reads its keys into its XxxOptions, whose fields hold the defaults; a key nobody read is an
// unknown option, naming the ones that are known.
#pragma once

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/options.h"

namespace baton {

template <typename Product, typename... Args>
class Registry {
 public:
  using Factory = std::function<Product(Args...)>;
  enum class Order { kRegistration, kSorted };  // how names() lists them

  explicit Registry(std::string kind, Order order = Order::kRegistration) : kind_(std::move(kind)), order_(order) {}
  // A table: {{"name", factory}, ...}, registered in that order.
  Registry(std::string kind, Order order, std::initializer_list<std::pair<std::string, Factory>> table)
      : Registry(std::move(kind), order) {
    for (const auto& [name, factory] : table) add(name, factory);
  }

  // Registers `name`. Throws std::logic_error for a name registered twice.
  Registry& add(const std::string& name, Factory factory) {
    if (!factories_.emplace(name, std::move(factory)).second)
      throw std::logic_error(kind_ + " '" + name + "' registered twice");
    names_.push_back(name);
    if (order_ == Order::kSorted) std::sort(names_.begin(), names_.end());
    return *this;
  }
  bool contains(const std::string& name) const { return factories_.count(name) > 0; }
  const std::vector<std::string>& names() const { return names_; }
  const std::string& kind() const { return kind_; }

  // What `name`'s factory builds from `args`. Throws std::invalid_argument for an unknown name
  // ("unknown <kind> 'x' (known: a, b, c)").
  Product make(const std::string& name, Args... args) const {
    const auto it = factories_.find(name);
    if (it == factories_.end()) throw std::invalid_argument(unknown_name(kind_, name, names_));
    return it->second(std::forward<Args>(args)...);
  }

 private:
  std::string kind_;
  Order order_;
  std::map<std::string, Factory> factories_;
  std::vector<std::string> names_;
};

// A registry of components configured by a mapping of options (a recipe's section).
template <typename T>
using ConfiguredRegistry = Registry<std::shared_ptr<T>, OptionReader&>;

// Builds `name` with the options `reader` reads (a missing key takes its default). Throws
// std::invalid_argument for an unknown name; the reader's error (OptionError, or its origin's) for an
// unknown key, a bad value, or a value the component refused (pointing at the key when the refusal's
// message starts with it: "alpha must be positive").
template <typename T>
std::shared_ptr<T> make_configured(const ConfiguredRegistry<T>& registry, const std::string& name,
                                   OptionReader& reader) {
  if (!registry.contains(name)) throw std::invalid_argument(unknown_name(registry.kind(), name, registry.names()));
  std::shared_ptr<T> built;
  try {
    built = registry.make(name, reader);
  } catch (const OptionError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    reader.fail_self(what, what.substr(0, what.find(' ')));
  }
  reader.finish();
  return built;
}

// As above, with the options of a JSON object named by `name` in messages ("mixup.alpha: ...").
template <typename T>
std::shared_ptr<T> make_configured(const ConfiguredRegistry<T>& registry, const std::string& name,
                                   const nlohmann::json& options) {
  if (!registry.contains(name)) throw std::invalid_argument(unknown_name(registry.kind(), name, registry.names()));
  OptionReader reader(name, options);
  return make_configured(registry, name, reader);
}

}  // namespace baton
