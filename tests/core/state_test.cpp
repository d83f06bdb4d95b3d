// The training state (src/core/state.cpp): durations, batch sizes, stopping, state dicts.
#include "baton/core/state.h"

#include <stdexcept>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/core/logger.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

TEST(State, DefaultConstructedIsEmpty) {
  State state;
  EXPECT_EQ(state.model, nullptr);
  EXPECT_TRUE(state.algorithms.empty());
  EXPECT_TRUE(state.callbacks.empty());
  EXPECT_FALSE(state.max_duration.has_value());
  EXPECT_EQ(state.timestamp, Timestamp());
  EXPECT_EQ(state.precision, Precision::kFp32);
  EXPECT_FALSE(state.stop_requested());
  EXPECT_EQ(state.batch.size(), 0);
  EXPECT_FALSE(state.elapsed_duration().has_value());
}

TEST(State, StopTrainingIsRecorded) {
  State state;
  state.stop_training();
  EXPECT_TRUE(state.stop_requested());
  state.clear_stop_request();
  EXPECT_FALSE(state.stop_requested());
}

TEST(State, ElapsedDurationIsTheFractionOfMaxDuration) {
  State state;
  state.max_duration = Time::parse("4ba");
  state.timestamp = state.timestamp.to_next_batch(10);
  EXPECT_DOUBLE_EQ(*state.elapsed_duration(), 0.25);
  state.max_duration = Time::parse("100sp");
  EXPECT_DOUBLE_EQ(*state.elapsed_duration(), 0.1);
}

TEST(State, BatchSizeIsTheLeadingDimension) {
  Batch batch{torch::zeros({7, 3}), torch::zeros({7})};
  EXPECT_EQ(batch.size(), 7);
}

class Counter : public Algorithm {
 public:
  bool match(Event, const State&) override { return false; }
  std::optional<int> apply(Event, State&, Logger&) override { return std::nullopt; }
  StateDict state_dict() const override {
    StateDict sd;
    sd.values["count"] = count;
    sd.tensors["shadow"] = shadow;
    return sd;
  }
  void load_state_dict(const StateDict& sd) override {
    count = sd.values.at("count");
    shadow = sd.tensors.at("shadow");
  }
  int count = 0;
  torch::Tensor shadow = torch::zeros({2});
};

TEST(State, StateDictRoundTripsModelTimestampAndAlgorithms) {
  State saved;
  saved.model = std::make_shared<torch::nn::LinearImpl>(3, 2);
  saved.timestamp = saved.timestamp.to_next_batch(32).to_next_batch(32);
  saved.run_name = "run-1";
  saved.max_duration = Time::parse("3ep");
  auto counter = std::make_shared<Counter>();
  counter->count = 5;
  counter->shadow = torch::tensor({1.0f, 2.0f});
  saved.algorithms.push_back(counter);
  const StateDict sd = saved.state_dict();
  EXPECT_TRUE(sd.tensors.count("model/weight"));
  EXPECT_TRUE(sd.tensors.count("algorithms/Counter/shadow"));

  State loaded;
  loaded.model = std::make_shared<torch::nn::LinearImpl>(3, 2);
  auto fresh = std::make_shared<Counter>();
  loaded.algorithms.push_back(fresh);
  loaded.load_state_dict(sd);
  for (const auto& item : saved.model->named_parameters()) {
    EXPECT_TRUE(torch::equal(item.value(), loaded.model->named_parameters()[item.key()])) << item.key();
  }
  EXPECT_EQ(loaded.timestamp, saved.timestamp);
  EXPECT_EQ(loaded.run_name, "run-1");
  EXPECT_EQ(*loaded.max_duration, Time::parse("3ep"));
  EXPECT_EQ(fresh->count, 5);
  EXPECT_TRUE(torch::equal(fresh->shadow, counter->shadow));
}

TEST(State, LoadRefusesAModelOfAnotherShapeNamingTheTensor) {
  State saved;
  saved.model = std::make_shared<torch::nn::LinearImpl>(3, 2);
  State loaded;
  loaded.model = std::make_shared<torch::nn::LinearImpl>(4, 2);
  try {
    loaded.load_state_dict(saved.state_dict());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("model/weight"));
    EXPECT_THAT(e.what(), HasSubstr("[2, 3]"));
  }
}

}  // namespace
}  // namespace baton
