// The checkpoint saver (src/train/checkpoint_saver.cpp): a name that would lose checkpoints is
// refused before anything is saved.
#include "baton/train/checkpoint.h"

#include "baton/core/time.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/train/checkpoint_saver.h"
#include "common/test_util.h"
#include "train/checkpoint_fixtures.h"

namespace baton {
namespace {

using namespace checkpoint_fixtures;  // NOLINT(google-build-using-namespace)

using testing::error_of;
using ::testing::HasSubstr;

TEST_F(CheckpointFiles, ANameThatWouldLoseCheckpointsIsRefusedBeforeAnythingIsSaved) {
  check_checkpoint_filename("ep{epoch}-ba{batch}.ckpt");
  check_checkpoint_filename("{run_name}-{batch}.ckpt");
  EXPECT_THAT(error_of([] { check_checkpoint_filename("latest"); }),
              HasSubstr("'latest': 'latest' is the link to the newest checkpoint"));
  EXPECT_THAT(error_of([] { check_checkpoint_filename("../escape.ckpt"); }), HasSubstr("without '/'"));
  EXPECT_THAT(error_of([] { check_checkpoint_filename("sub/x.ckpt"); }), HasSubstr("without '/'"));
  EXPECT_THAT(error_of([] { check_checkpoint_filename(".x.ckpt"); }), HasSubstr("hidden"));
  EXPECT_THAT(error_of([] { check_checkpoint_filename(""); }), HasSubstr("empty"));
  EXPECT_THAT(error_of([&] {
                CheckpointSaver saver(
                    CheckpointSaverOptions().folder(dir_).filename("latest"), [] { return StateDict(); }, nullptr);
              }),
              HasSubstr("save_filename 'latest'"));
}

}  // namespace
}  // namespace baton
