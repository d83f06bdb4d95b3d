// What checkpoint_saver_test.cpp and checkpoint_test.cpp share.
#pragma once

#include "baton/train/checkpoint.h"

#include "baton/core/time.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/train/checkpoint_saver.h"
#include "common/test_util.h"

namespace baton::checkpoint_fixtures {

using testing::error_of;
using ::testing::HasSubstr;

class CheckpointFiles : public ::testing::Test {
 protected:
  testing::TempDir tmp_{"ckpt"};
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  static StateDict sample() {
    StateDict sd;
    sd.values["timestamp"] = {{"batch", 7}};
    sd.values["run_name"] = "r";
    sd.tensors["model/w"] = torch::randn({3, 4});
    sd.tensors["model/b"] = torch::arange(5, torch::kLong);
    sd.tensors["ema/w"] = torch::randn({2}).to(torch::kBFloat16);
    sd.tensors["flags"] = torch::tensor({true, false});
    return sd;
  }

  std::string dir_ = tmp_.str();
};

}  // namespace baton::checkpoint_fixtures
