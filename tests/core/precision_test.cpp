// Precisions (src/core/precision.cpp): names parsed, unknown ones refused.
#include "baton/core/state.h"

#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/core/logger.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

TEST(State, PrecisionParsesAndRefusesUnknownNames) {
  EXPECT_EQ(parse_precision("amp_bf16"), Precision::kAmpBf16);
  EXPECT_EQ(to_string(Precision::kAmpBf16), "amp_bf16");
  try {
    parse_precision("fp16");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("'fp16'"));
  }
}

}  // namespace
}  // namespace baton
