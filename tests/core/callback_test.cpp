#include "baton/core/callback.h"

#include <string>

#include <gtest/gtest.h>

#include "baton/core/logger.h"
#include "baton/core/state.h"
#include "core/event_list.h"

namespace baton {
namespace {

// Overrides every per-event method and records which one ran.
class EveryMethod : public Callback {
 public:
#define BATON_RECORD(enumerator, method) \
  void method(State&, Logger&) override { last = #method; }
  BATON_FOR_EACH_EVENT(BATON_RECORD)
#undef BATON_RECORD
  std::string last;
};

TEST(Callback, RunEventCallsTheMethodNamedAfterTheEvent) {
  State state;
  Logger logger(state);
  EveryMethod callback;
  for (Event event : all_events()) {
    callback.last.clear();
    callback.run_event(event, state, logger);
    EXPECT_EQ(callback.last, to_string(event));
  }
}

TEST(Callback, DefaultMethodsDoNothing) {
  State state;
  Logger logger(state);
  Callback callback;
  for (Event event : all_events()) EXPECT_NO_THROW(callback.run_event(event, state, logger));
  EXPECT_TRUE(callback.state_dict().empty());
  EXPECT_FALSE(callback.is_logger_destination());
  EXPECT_TRUE(LoggerDestination().is_logger_destination());
}

}  // namespace
}  // namespace baton
