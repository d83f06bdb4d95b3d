// State dicts (src/core/state_dict.cpp): insert and extract are inverse under a prefix.
#include "baton/core/state.h"

#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/core/logger.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

TEST(StateDict, InsertAndExtractArePrefixInverse) {
  StateDict child;
  child.values["n"] = 1;
  child.tensors["w"] = torch::ones({1});
  StateDict parent;
  parent.insert("algorithms/A", child);
  parent.insert("algorithms/AB", child);
  const StateDict back = parent.extract("algorithms/A");
  EXPECT_EQ(back.values, child.values);
  ASSERT_EQ(back.tensors.size(), 1u);
  EXPECT_TRUE(back.tensors.count("w"));
  EXPECT_TRUE(parent.extract("algorithms/missing").empty());
}

}  // namespace
}  // namespace baton
