// The algorithm registry (src/algorithms/registry.cpp): every algorithm built by name, bad options
// refused, and which algorithms act inside the train step.
#include "baton/algorithms/algorithms.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include <ATen/autocast_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "algorithms/algorithms_fixtures.h"
#include "baton/algorithms/registry.h"
#include "baton/core/grad_scaler.h"
#include "baton/core/logger.h"
#include "baton/core/state.h"
#include "baton/models/surgery.h"
#include "baton/models/zoo.h"
#include "baton/nas/space.h"
#include "baton/optim/optimizers.h"
#include "baton/train/one_shot.h"
#include "baton/train/trainer.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton {
namespace {

using namespace algorithms_fixtures;  // NOLINT(google-build-using-namespace)

using ::testing::HasSubstr;
using testing::Probe;
using testing::quadrants;

TEST(Algorithms, ThoseActingInsideTheTrainStepSaySoAndTheOthersDoNot) {
  Bench b;
  EXPECT_EQ(make_algorithm("label_smoothing")->graph_blocker(b.state),
            "acts on before_loss, after_loss, inside the train step");
  EXPECT_EQ(make_algorithm("gradient_clipping")->graph_blocker(b.state),
            "acts on after_train_batch, inside the train step");
  EXPECT_THAT(make_algorithm("mixup")->graph_blocker(b.state), HasSubstr("before_forward"));
  b.state.timestamp = b.state.timestamp.to_next_batch(8, 0, 0.1);  // batch 1: not a SAM step of interval 2
  EXPECT_THAT(make_algorithm("sam", {{"interval", 2}})->graph_blocker(b.state), HasSubstr("after_train_batch"));
  EXPECT_THAT(make_algorithm("single_path")->graph_blocker(b.state), HasSubstr("samples a path of the supernet"));
  for (const std::string name : {"ema", "progressive_resizing", "cutout", "blurpool", "layer_freezing", "swa"}) {
    EXPECT_EQ(make_algorithm(name)->graph_blocker(b.state), "") << name;
  }
}

// ---- Registry ----

TEST(Registry, BuildsEveryAlgorithmByNameAndRefusesBadOptions) {
  EXPECT_EQ(algorithm_names().size(), 22U);
  for (const auto& name : algorithm_names()) {
    auto a = make_algorithm(name);
    EXPECT_EQ(a->recipe_spec()["name"], name);
  }
  EXPECT_THAT(testing::error_of([] {
                make_algorithm("single_path", {{"sampling", "sometimes"}});
              }),
              HasSubstr("sampling"));
  EXPECT_THAT(testing::error_of([] { make_algorithm("mixupp"); }),
              HasSubstr("unknown algorithm 'mixupp' (known: blurpool"));
  try {
    make_algorithm("mixup", {{"alpah", 0.2}});
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(e.key(), "alpah");
    EXPECT_THAT(e.what(), HasSubstr("mixup.alpah: unknown option (known: alpha, interpolate_loss)"));
  }
  try {
    make_algorithm("ema", {{"half_life", 50}});
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(e.key(), "half_life");
    EXPECT_THAT(e.what(), HasSubstr("expected a time such as 50ba"));
  }
  EXPECT_THAT(testing::error_of([] {
                make_algorithm("label_smoothing", {{"smoothing", 1.5}});
              }),
              HasSubstr("smoothing must be in [0, 1)"));
}

}  // namespace
}  // namespace baton
