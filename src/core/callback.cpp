#include "baton/core/callback.h"

#include "baton/core/algorithm.h"
#include "event_list.h"

namespace baton {

std::string Callback::name() const { return short_type_name(typeid(*this)); }

void Callback::run_event(Event event, State& state, Logger& logger) {
  switch (event) {
#define BATON_DISPATCH(enumerator, method) \
  case Event::enumerator: method(state, logger); return;
    BATON_FOR_EACH_EVENT(BATON_DISPATCH)
#undef BATON_DISPATCH
  }
}

}  // namespace baton
