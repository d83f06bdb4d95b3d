#include "baton/core/event.h"

#include <set>
#include <stdexcept>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace baton {
namespace {

using ::testing::HasSubstr;

TEST(Event, EveryEventRoundTripsThroughItsString) {
  std::set<std::string> seen;
  for (Event e : all_events()) {
    const std::string name(to_string(e));
    EXPECT_EQ(parse_event(name), e) << name;
    EXPECT_TRUE(seen.insert(name).second) << "duplicate event string " << name;
  }
  EXPECT_EQ(seen.size(), 40u);
}

TEST(Event, StringsMatchTheReference) {
  EXPECT_EQ(to_string(Event::kInit), "init");
  EXPECT_EQ(to_string(Event::kBeforeLoad), "before_load");
  EXPECT_EQ(to_string(Event::kBeforeTrainBatch), "before_train_batch");
  EXPECT_EQ(to_string(Event::kBatchCheckpoint), "batch_checkpoint");
  EXPECT_EQ(to_string(Event::kEvalBeforeAll), "eval_before_all");
  EXPECT_EQ(to_string(Event::kEvalStandaloneEnd), "eval_standalone_end");
  EXPECT_EQ(to_string(Event::kPredictAfterForward), "predict_after_forward");
  EXPECT_EQ(to_string(Event::kPredictEnd), "predict_end");
}

TEST(Event, ParseRefusesUnknownStringsNamingThem) {
  for (const char* bad : {"", "batchend", "BATCH_END", "batch_end ", "fit"}) {
    try {
      parse_event(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("'" + std::string(bad) + "'"));
    }
  }
}

TEST(Event, ParseSuggestsACloseMatch) {
  try {
    parse_event("epoch_sta");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("did you mean 'epoch_start'"));
  }
}

TEST(Event, InitAndCheckpointsAreNeitherBeforeNorAfter) {
  for (Event e : {Event::kInit, Event::kBatchCheckpoint, Event::kEpochCheckpoint, Event::kIterationCheckpoint}) {
    EXPECT_FALSE(is_before_event(e)) << to_string(e);
    EXPECT_FALSE(is_after_event(e)) << to_string(e);
  }
}

TEST(Event, EveryOtherEventIsOneHalfOfAPairWithOneCanonicalName) {
  int before = 0;
  int after = 0;
  for (Event e : all_events()) {
    if (e == Event::kInit || e == Event::kBatchCheckpoint || e == Event::kEpochCheckpoint ||
        e == Event::kIterationCheckpoint) {
      continue;
    }
    EXPECT_NE(is_before_event(e), is_after_event(e)) << to_string(e);
    before += is_before_event(e);
    after += is_after_event(e);
    // The partner shares the canonical name and is of the other kind.
    int partners = 0;
    for (Event other : all_events()) {
      if (other != e && canonical_name(other) == canonical_name(e)) {
        ++partners;
        EXPECT_NE(is_before_event(other), is_before_event(e)) << to_string(e) << " / " << to_string(other);
      }
    }
    EXPECT_EQ(partners, 1) << to_string(e);
  }
  EXPECT_EQ(before, 18);
  EXPECT_EQ(after, 18);
}

TEST(Event, BeforeAndAfterSetsMatchTheReference) {
  EXPECT_TRUE(is_before_event(Event::kFitStart));
  EXPECT_TRUE(is_before_event(Event::kBeforeLoad));
  EXPECT_TRUE(is_before_event(Event::kBeforeDataloader));
  EXPECT_TRUE(is_before_event(Event::kEvalBeforeAll));
  EXPECT_TRUE(is_before_event(Event::kEvalStandaloneStart));
  EXPECT_TRUE(is_before_event(Event::kPredictBeforeForward));
  EXPECT_TRUE(is_after_event(Event::kBatchEnd));
  EXPECT_TRUE(is_after_event(Event::kAfterTrainBatch));
  EXPECT_TRUE(is_after_event(Event::kEvalAfterAll));
  EXPECT_TRUE(is_after_event(Event::kPredictEnd));
  EXPECT_FALSE(is_after_event(Event::kBatchStart));
  EXPECT_FALSE(is_before_event(Event::kBatchEnd));
}

TEST(Event, CanonicalNames) {
  EXPECT_EQ(canonical_name(Event::kEpochStart), "epoch");
  EXPECT_EQ(canonical_name(Event::kEpochEnd), "epoch");
  EXPECT_EQ(canonical_name(Event::kBeforeForward), "forward");
  EXPECT_EQ(canonical_name(Event::kAfterTrainBatch), "train_batch");
  EXPECT_EQ(canonical_name(Event::kEvalBeforeForward), "eval_forward");
  EXPECT_EQ(canonical_name(Event::kEvalAfterAll), "eval_all");
  EXPECT_EQ(canonical_name(Event::kEvalStandaloneStart), "eval_standalone");
  EXPECT_EQ(canonical_name(Event::kPredictBatchEnd), "predict_batch");
  EXPECT_EQ(canonical_name(Event::kBeforeLoad), "load");
  EXPECT_EQ(canonical_name(Event::kInit), "init");
  EXPECT_EQ(canonical_name(Event::kBatchCheckpoint), "batch_checkpoint");
}

TEST(Event, EvalAndPredictEvents) {
  int evals = 0;
  int predicts = 0;
  for (Event e : all_events()) {
    evals += is_eval(e);
    predicts += is_predict(e);
    EXPECT_FALSE(is_eval(e) && is_predict(e));
  }
  EXPECT_EQ(evals, 10);
  EXPECT_EQ(predicts, 6);
  EXPECT_TRUE(is_eval(Event::kEvalStandaloneEnd));
  EXPECT_FALSE(is_eval(Event::kBeforeForward));
  EXPECT_TRUE(is_predict(Event::kPredictStart));
}

}  // namespace
}  // namespace baton
