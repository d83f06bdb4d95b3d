// Callbacks by name (src/callbacks/registry.cpp): every name builds, an unknown name lists the known
// ones, bad options are named; which callbacks keep CUDA graphs off.
#include "baton/callbacks/monitors.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/callbacks/registry.h"
#include "baton/loggers/in_memory_logger.h"
#include "baton/models/export.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"
#include "common/test_util.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

// The audit of what runs inside a CUDA graph's step: a callback whose promise depends on running
// before the optimizer's step (inside the captured region) keeps graphs off; the others are fine
// replayed (their events fire around the replay, with its state). A new callback must be placed here.
TEST(Callbacks, ThoseThatMustRunInsideTheStepKeepCudaGraphsOff) {
  std::set<std::string> blocking;
  for (const auto& name : callback_names()) {
    nlohmann::json options = nlohmann::json::object();
    if (name == "threshold_stopper") options = {{"monitor", "eval/accuracy"}, {"threshold", 0.9}};
    if (name == "early_stopper") options = {{"monitor", "eval/accuracy"}};
    std::shared_ptr<Callback> callback;
    try {
      callback = make_callback(name, options);
    } catch (const std::invalid_argument& e) {
      ADD_FAILURE() << name << ": " << e.what();
      continue;
    }
    if (!callback->graph_blocker().empty()) blocking.insert(name);
  }
  EXPECT_EQ(blocking, (std::set<std::string>{"nan_monitor", "optimizer_monitor"}));
  EXPECT_THAT(NanMonitor().graph_blocker(), HasSubstr("after_loss"));
}

TEST(Callbacks, AnUnknownNameListsTheKnownOnesAndBadOptionsAreNamed) {
  const std::vector<std::string> names = callback_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_THAT(testing::error_of([] { make_callback("early_stoper"); }),
              ::testing::AllOf(HasSubstr("unknown callback 'early_stoper' (known: "), HasSubstr("early_stopper"),
                               HasSubstr("did you mean 'early_stopper'?")));
  EXPECT_THAT(testing::error_of([] {
                make_callback("early_stopper", {{"monitor", "eval/accuracy"}, {"patience_", 3}});
              }),
              HasSubstr("patience_"));
  EXPECT_THAT(testing::error_of([] {
                make_callback("early_stopper", {{"monitor", "eval/accuracy"}, {"patience", "x"}});
              }),
              HasSubstr("patience"));
}

}  // namespace
}  // namespace baton
