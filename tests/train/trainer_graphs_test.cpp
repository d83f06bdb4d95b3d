// CUDA graphs in the trainer (src/train/trainer_graphs.cpp): `auto` trains eagerly on the CPU.
#include "baton/train/trainer.h"

#include <stdexcept>

#include <caffe2/serialize/inline_container.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>

#include "baton/algorithms/registry.h"
#include "baton/loggers/in_memory_logger.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/checkpoint.h"
#include "baton/train/checkpoint_saver.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::blobs;
using ::testing::HasSubstr;
using testing::small_options;

TEST(Trainer, CudaGraphsAutoTrainsEagerOnTheCpu) {
  Trainer trainer(small_options().device("cpu").max_duration("2ep").cuda_graphs(CudaGraphs::kAuto));
  trainer.fit();
  EXPECT_EQ(trainer.summary().graph_steps, 0);
  EXPECT_GT(trainer.summary().steps, 0);
}

}  // namespace
}  // namespace baton
