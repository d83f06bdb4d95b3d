#include "baton/core/time.h"

#include <stdexcept>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace baton {
namespace {

using ::testing::HasSubstr;

TEST(Time, ParsesEveryUnit) {
  EXPECT_EQ(Time::parse("10ep"), Time(10, TimeUnit::kEpoch));
  EXPECT_EQ(Time::parse("500ba"), Time(500, TimeUnit::kBatch));
  EXPECT_EQ(Time::parse("1000sp"), Time(1000, TimeUnit::kSample));
  EXPECT_EQ(Time::parse("3e4tok"), Time(30000, TimeUnit::kToken));
  EXPECT_EQ(Time::parse("0.5dur"), Time(0.5, TimeUnit::kDuration));
  EXPECT_EQ(Time::parse("2iter"), Time(2, TimeUnit::kIteration));
  EXPECT_EQ(Time::parse(" 7ep "), Time(7, TimeUnit::kEpoch));
}

TEST(Time, ParsesWallClock) {
  EXPECT_EQ(Time::parse("1h30m"), Time::from_seconds(5400));
  EXPECT_EQ(Time::parse("90s"), Time::from_seconds(90));
  EXPECT_EQ(Time::parse("45m"), Time::from_seconds(2700));
  EXPECT_EQ(Time::parse("2h"), Time::from_seconds(7200));
  EXPECT_EQ(Time::parse("1h30m15s"), Time::from_seconds(5415));
  EXPECT_EQ(Time::parse("1.5h"), Time::from_seconds(5400));
  EXPECT_EQ(Time::parse("1h30m").unit(), TimeUnit::kSecond);
}

TEST(Time, ToStringRoundTrips) {
  for (const char* text : {"10ep", "500ba", "1000sp", "30000tok", "0.5dur", "2iter", "1h30m", "90s", "0s", "0.25s"}) {
    const Time t = Time::parse(text);
    EXPECT_EQ(Time::parse(t.to_string()), t) << text;
  }
  EXPECT_EQ(Time::parse("1h30m").to_string(), "1h30m");
  EXPECT_EQ(Time::parse("90s").to_string(), "1m30s");
  EXPECT_EQ(Time::parse("3e4tok").to_string(), "30000tok");
  EXPECT_EQ(Time::parse("0.5dur").to_string(), "0.5dur");
}

TEST(Time, RefusesBadStringsNamingThem) {
  for (const char* bad : {"", "ep", "10", "10xx", "1.5ep", "-1ep", "+3ba", "1h1h", "30m1h", "nanep", "infba", "ms",
                          "1ms", "ten epochs", "3929090009300878m"}) {
    try {
      Time::parse(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("'" + std::string(bad) + "'")) << bad;
    }
  }
}

TEST(Time, ErrorsSayWhatIsWrong) {
  try {
    Time::parse("1.5ep");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("whole number"));
  }
  try {
    Time::parse("10xx");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown unit 'xx'"));
    EXPECT_THAT(e.what(), HasSubstr("10ep"));
  }
}

TEST(Time, ArithmeticWithinOneUnit) {
  EXPECT_EQ(Time::parse("3ep") + Time::parse("2ep"), Time::parse("5ep"));
  EXPECT_EQ(Time::parse("3ep") - Time::parse("2ep"), Time::parse("1ep"));
  EXPECT_EQ(Time::parse("10ep") * 0.5, Time::parse("5ep"));
  EXPECT_EQ(Time::parse("3ep") * 0.5, Time::parse("2ep"));  // integral units round
  EXPECT_EQ(Time::parse("1dur") * 0.25, Time::parse("0.25dur"));
  EXPECT_DOUBLE_EQ(Time::parse("3ep") / Time::parse("6ep"), 0.5);
  EXPECT_LT(Time::parse("3ep"), Time::parse("4ep"));
  EXPECT_LE(Time::parse("4ep"), Time::parse("4ep"));
  EXPECT_GT(Time::parse("500ba"), Time::parse("499ba"));
  EXPECT_GE(Time::parse("1h"), Time::parse("59m"));
}

TEST(Time, ArithmeticAcrossUnitsIsAnError) {
  const Time ep = Time::parse("1ep");
  const Time ba = Time::parse("1ba");
  EXPECT_THROW(ep + ba, std::invalid_argument);
  EXPECT_THROW(ep - ba, std::invalid_argument);
  EXPECT_THROW((void)(ep < ba), std::invalid_argument);
  EXPECT_THROW((void)(ep >= ba), std::invalid_argument);
  EXPECT_THROW((void)(ep / ba), std::invalid_argument);
  EXPECT_FALSE(ep == ba);
  EXPECT_TRUE(ep != ba);
  try {
    (void)(ep + ba);
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("1ep + 1ba"));
  }
}

TEST(Time, ConstructorRefusesFractionalCounts) {
  EXPECT_THROW(Time(1.5, TimeUnit::kBatch), std::invalid_argument);
  EXPECT_NO_THROW(Time(1.5, TimeUnit::kSecond));
}

TEST(Timestamp, AdvancesByBatchEpochAndIteration) {
  Timestamp ts;
  ts = ts.to_next_batch(128, 0, 0.5);
  ts = ts.to_next_batch(64, 10, 0.25);
  EXPECT_EQ(ts.batch(), 2);
  EXPECT_EQ(ts.batch_in_epoch(), 2);
  EXPECT_EQ(ts.sample(), 192);
  EXPECT_EQ(ts.sample_in_epoch(), 192);
  EXPECT_EQ(ts.token(), 10);
  EXPECT_DOUBLE_EQ(ts.total_wct(), 0.75);
  EXPECT_DOUBLE_EQ(ts.epoch_wct(), 0.75);
  EXPECT_DOUBLE_EQ(ts.batch_wct(), 0.25);

  ts = ts.to_next_epoch();
  EXPECT_EQ(ts.epoch(), 1);
  EXPECT_EQ(ts.batch(), 2);
  EXPECT_EQ(ts.batch_in_epoch(), 0);
  EXPECT_EQ(ts.sample_in_epoch(), 0);
  EXPECT_EQ(ts.epoch_in_iteration(), 1);
  EXPECT_DOUBLE_EQ(ts.epoch_wct(), 0.0);
  EXPECT_DOUBLE_EQ(ts.total_wct(), 0.75);

  ts = ts.to_next_batch(32).to_next_iteration();
  EXPECT_EQ(ts.iteration(), 1);
  EXPECT_EQ(ts.epoch_in_iteration(), 0);
  EXPECT_EQ(ts.batch_in_epoch(), 0);
  EXPECT_EQ(ts.batch(), 3);
  EXPECT_EQ(ts.sample(), 224);
}

TEST(Timestamp, GetReturnsTheCountInEachUnit) {
  Timestamp ts = Timestamp().to_next_batch(100, 7, 2.0).to_next_epoch();
  EXPECT_EQ(ts.get(TimeUnit::kEpoch), Time::parse("1ep"));
  EXPECT_EQ(ts.get(TimeUnit::kBatch), Time::parse("1ba"));
  EXPECT_EQ(ts.get(TimeUnit::kSample), Time::parse("100sp"));
  EXPECT_EQ(ts.get(TimeUnit::kToken), Time::parse("7tok"));
  EXPECT_EQ(ts.get(TimeUnit::kSecond), Time::parse("2s"));
  EXPECT_TRUE(ts.get(TimeUnit::kEpoch) >= Time::parse("1ep"));
  EXPECT_THROW(ts.get(TimeUnit::kDuration), std::invalid_argument);
}

TEST(Timestamp, StateDictRoundTrips) {
  Timestamp ts = Timestamp().to_next_batch(100, 7, 2.0).to_next_epoch().to_next_batch(3, 0, 0.125);
  Timestamp loaded;
  loaded.load_state_dict(ts.state_dict());
  EXPECT_EQ(loaded, ts);
  EXPECT_EQ(loaded.to_string(), "[ep=1][ba=2][sp=103]");
}

TEST(Timestamp, LoadRefusesAMissingKeyNamingIt) {
  auto state = Timestamp().state_dict();
  state.erase("batch_in_epoch");
  Timestamp ts;
  try {
    ts.load_state_dict(state);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("batch_in_epoch"));
  }
  EXPECT_THROW(ts.load_state_dict(nlohmann::json::array()), std::invalid_argument);
}

}  // namespace
}  // namespace baton
