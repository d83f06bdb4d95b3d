// Algorithm and Callback (src/core/algorithm.cpp): a name is the class name without namespaces.
#include "baton/core/algorithm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "baton/core/callback.h"
#include "baton/core/event.h"
#include "baton/core/state.h"

namespace baton {
namespace {

namespace ns {
class MyAlgorithm : public Algorithm {
 public:
  bool match(Event, const State&) override { return false; }
  std::optional<int> apply(Event, State&, Logger&) override { return std::nullopt; }
};
class MyCallback : public Callback {};
template <typename T>
class Wrapping : public Algorithm {
 public:
  bool match(Event, const State&) override { return false; }
  std::optional<int> apply(Event, State&, Logger&) override { return std::nullopt; }
};
struct Inner {};
}  // namespace ns

// Matches the events it is given, whatever the state.
class Matching : public Algorithm {
 public:
  explicit Matching(std::vector<Event> events) : events_(std::move(events)) {}
  bool match(Event e, const State&) override { return std::find(events_.begin(), events_.end(), e) != events_.end(); }
  std::optional<int> apply(Event, State&, Logger&) override { return std::nullopt; }

 private:
  std::vector<Event> events_;
};

TEST(Algorithm, NameIsTheClassNameWithoutNamespaces) {
  EXPECT_EQ(ns::MyAlgorithm().name(), "MyAlgorithm");
  EXPECT_EQ(ns::MyCallback().name(), "MyCallback");
}

TEST(Algorithm, TemplateArgumentsKeepTheirNamespaces) {
  const std::string name = ns::Wrapping<ns::Inner>().name();
  EXPECT_EQ(name.rfind("Wrapping<", 0), 0U) << name;
  EXPECT_NE(name.find("ns::Inner>"), std::string::npos) << name;
}

TEST(Algorithm, AGraphBlockerNamesTheEventsInsideTheTrainStepItActsOn) {
  const State state;
  EXPECT_EQ(Matching({Event::kBatchStart, Event::kEpochEnd}).graph_blocker(state), "");
  EXPECT_EQ(Matching({Event::kBatchStart, Event::kAfterLoss, Event::kBeforeBackward}).graph_blocker(state),
            "acts on " + std::string(to_string(Event::kAfterLoss)) + ", " +
                std::string(to_string(Event::kBeforeBackward)) + ", inside the train step");
}

}  // namespace
}  // namespace baton
