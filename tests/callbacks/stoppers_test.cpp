#include "baton/callbacks/stoppers.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/callbacks/registry.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"
#include "common/test_util.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

// Two separable classes: accuracy climbs to 1 within a few batches.
std::shared_ptr<TensorDataset> easy(int64_t n, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  const at::Tensor y = torch::randint(0, 2, {n}, gen, torch::kLong);
  const at::Tensor x = torch::randn({n, 4}, gen) * 0.3 + y.to(torch::kFloat).unsqueeze(1) * 2.0 - 1.0;
  return std::make_shared<TensorDataset>(x, y);
}

TrainerOptions options(std::shared_ptr<Callback> callback) {
  torch::manual_seed(0);
  auto model = make_model("mlp", ModelOptions().input_shape({4}).num_classes(2).hidden({8}));
  return TrainerOptions()
      .model(model)
      .train_dataloader(std::make_shared<DataLoader>(easy(256, 1), DataLoaderOptions().batch_size(16)))
      .eval_dataloader("eval", std::make_shared<DataLoader>(easy(64, 2), DataLoaderOptions().batch_size(64)))
      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.2), model->parameters())})
      .callbacks({std::move(callback)})
      .progress_bar(false)
      .console_log_interval("0ba")
      .eval_interval("2ba")
      .max_duration("10ep");
}

TEST(ThresholdStopper, StopsAtTheFirstEvaluationThatReachesTheValue) {
  auto stopper = make_callback("threshold_stopper", {{"monitor", "eval/accuracy"}, {"threshold", 0.95}});
  Trainer trainer(options(stopper));
  trainer.fit();
  const auto* t = dynamic_cast<ThresholdStopper*>(stopper.get());
  ASSERT_TRUE(t->stopped_at());
  EXPECT_TRUE(trainer.summary().stopped_early);
  EXPECT_EQ(trainer.summary().steps, *t->stopped_at());
  EXPECT_EQ(*t->stopped_at() % 2, 0);  // an evaluation step
  EXPECT_LT(trainer.summary().steps, 160);
  EXPECT_GE(trainer.state().eval_metrics.at("eval").at("accuracy"), 0.95);
}

TEST(EarlyStopper, StopsWhenTheMetricStopsImproving) {
  // Accuracy reaches 1.0 and cannot improve: patience of 4 batches later the run stops.
  auto stopper = make_callback("early_stopper", {{"monitor", "eval/accuracy"}, {"patience", "4ba"}});
  Trainer trainer(options(stopper));
  trainer.fit();
  EXPECT_TRUE(trainer.summary().stopped_early);
  EXPECT_LT(trainer.summary().steps, 160);
}

// The model's first weight at each evaluation, before the stopper acts on it.
class WeightsAtEvaluations : public Callback {
 public:
  void eval_end(State& state, Logger&) override {
    seen[state.timestamp.batch()] = state.model->parameters()[0].detach().clone();
  }
  std::map<int64_t, at::Tensor> seen;
};

TEST(EarlyStopper, TheWeightsOfTheBestEvaluationAreWhatTheRunEndsWith) {
  for (const bool restore : {true, false}) {
    auto spy = std::make_shared<WeightsAtEvaluations>();
    auto stopper =
        make_callback("early_stopper", {{"monitor", "eval/accuracy"}, {"patience", "4ba"}, {"restore_best", restore}});
    Trainer trainer(options(spy).callbacks({spy, stopper}));
    trainer.fit();
    ASSERT_TRUE(trainer.summary().stopped_early);
    const int64_t best = dynamic_cast<EarlyStopper*>(stopper.get())->best_at();
    const int64_t last = trainer.summary().steps;
    ASSERT_LT(best, last);
    ASSERT_FALSE(torch::equal(spy->seen.at(best), spy->seen.at(last)));  // training went on meanwhile
    const at::Tensor now = trainer.state().model->parameters()[0];
    EXPECT_TRUE(torch::equal(now, spy->seen.at(restore ? best : last))) << "restore_best " << restore;
  }
}

TEST(CallbackRegistry, RefusesUnknownNamesAndOptions) {
  EXPECT_THAT(testing::error_of([] { make_callback("treshold_stopper"); }),
              HasSubstr("unknown callback 'treshold_stopper' (known: early_stopper, free_outputs, lr_monitor,"));
  EXPECT_THAT(testing::error_of([] {
                make_callback("threshold_stopper", {{"monitor", "accuracy"}});
              }),
              HasSubstr("monitor must be '<evaluator>/<metric>'"));
  EXPECT_THAT(testing::error_of([] {
                make_callback("early_stopper", {{"patience", "3sp"}});
              }),
              HasSubstr("patience must be in ep or ba"));
}

}  // namespace
}  // namespace baton
