#include "baton/core/algorithm.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "baton/core/state.h"

namespace baton {

std::string short_type_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status),
                                                   std::free);
  std::string name = (status == 0 && demangled) ? demangled.get() : type.name();
  // Drop namespaces, but not the ones inside template arguments: ns::Foo<ns::Bar> -> Foo<ns::Bar>.
  const auto template_start = name.find('<');
  const auto scope = name.rfind("::", template_start);
  if (scope != std::string::npos && (template_start == std::string::npos || scope < template_start)) {
    name.erase(0, scope + 2);
  }
  return name;
}

std::string Algorithm::name() const { return short_type_name(typeid(*this)); }

std::string Algorithm::graph_blocker(const State& state) {
  std::string events;
  for (Event e : {Event::kBeforeForward, Event::kAfterForward, Event::kBeforeLoss, Event::kAfterLoss,
                  Event::kBeforeBackward, Event::kAfterBackward, Event::kAfterTrainBatch}) {
    if (match(e, state)) events += (events.empty() ? "" : ", ") + std::string(to_string(e));
  }
  return events.empty() ? "" : "acts on " + events + ", inside the train step";
}

}  // namespace baton
