// The schedule clock (src/core/schedule.cpp): every unit a schedule may use turned into batches, and
// the units it cannot convert refused saying which to use.
#include "baton/core/schedule.h"

#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

const ScheduleClock kClock{/*batches_per_epoch=*/10, /*batch_size=*/32, /*max_batches=*/100};

TEST(ScheduleClock, ConvertsEveryUnitToBatches) {
  EXPECT_DOUBLE_EQ(kClock.to_batches(Time::parse("3ep")), 30);
  EXPECT_DOUBLE_EQ(kClock.to_batches(Time::parse("7ba")), 7);
  EXPECT_DOUBLE_EQ(kClock.to_batches(Time::parse("64sp")), 2);
  EXPECT_DOUBLE_EQ(kClock.to_batches(Time::parse("0.25dur")), 25);
  EXPECT_THROW(kClock.to_batches(Time::parse("1h")), std::invalid_argument);
  // Tokens: only where the data counts them (windows of 16 tokens here).
  EXPECT_THROW(kClock.to_batches(Time::parse("512tok")), std::invalid_argument);
  ScheduleClock tokens = kClock;
  tokens.tokens_per_sample = 16;
  EXPECT_DOUBLE_EQ(tokens.to_batches(Time::parse("1024tok")), 2);
}

TEST(ScheduleClock, WhatItCannotConvertIsSaidWithTheUnitsToUse) {
  EXPECT_THAT(error_of([] { kClock.to_batches(Time::parse("90s")); }),
              ::testing::AllOf(HasSubstr("a schedule cannot use "), HasSubstr(": use ep, ba, sp, tok or dur")));
  ScheduleClock no_size = kClock;
  no_size.batch_size = 0;
  EXPECT_THAT(error_of([&] { no_size.to_batches(Time::parse("64sp")); }), HasSubstr("no batch size"));
  ScheduleClock wall_clock = kClock;
  wall_clock.max_batches = 0;  // max_duration in seconds
  EXPECT_THAT(error_of([&] { wall_clock.to_batches(Time::parse("0.5dur")); }),
              HasSubstr("max_duration is a wall-clock time; use ep, ba, sp or tok"));
  EXPECT_DOUBLE_EQ(wall_clock.to_batches(Time::parse("2ep")), 20);
}

}  // namespace
}  // namespace baton
