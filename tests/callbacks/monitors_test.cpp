#include "baton/callbacks/monitors.h"

#include <filesystem>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/callbacks/registry.h"
#include "baton/loggers/in_memory_logger.h"
#include "baton/models/export.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"
#include "common/test_util.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<TensorDataset> monitored_images(int64_t n) {
  auto gen = at::detail::createCPUGenerator(5);
  return std::make_shared<TensorDataset>(torch::randn({n, 1, 16, 16}, gen),
                                         torch::randint(0, 4, {n}, gen, torch::kLong));
}

struct SmallRun {
  explicit SmallRun(std::vector<std::shared_ptr<Callback>> callbacks, const std::string& duration = "6ba",
                    double lr = 0.05) {
    torch::manual_seed(0);
    model = make_model("fashion_cnn", ModelOptions().input_shape({1, 16, 16}).num_classes(4));
    options =
        TrainerOptions()
            .model(model)
            .train_dataloader(std::make_shared<DataLoader>(monitored_images(96), DataLoaderOptions().batch_size(16)))
            .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(lr), model->parameters())})
            .callbacks(std::move(callbacks))
            .loggers({memory})
            .progress_bar(false)
            .console_log_interval("0ba")
            .eval_interval("0ep")
            .max_duration(duration);
  }
  std::shared_ptr<Model> model;
  std::shared_ptr<InMemoryLogger> memory = std::make_shared<InMemoryLogger>();
  TrainerOptions options;
};

TEST(MultiplyAdds, CountsConvolutionsAndLinearLayers) {
  auto model = make_model("fashion_cnn", ModelOptions().input_shape({1, 28, 28}).num_classes(10));
  // conv1 28*28*32*9, conv2 14*14*64*32*9, f1 3136*128, f2 128*10
  const double want = 28.0 * 28 * 32 * 9 + 14.0 * 14 * 64 * 32 * 9 + 3136.0 * 128 + 128.0 * 10;
  EXPECT_DOUBLE_EQ(count_multiply_adds(*model, torch::randn({2, 1, 28, 28})), want);
}

TEST(SpeedMonitor, LogsThroughputEpochTimeAndFlops) {
  auto speed = make_callback("speed_monitor", {{"window_size", 3}});
  SmallRun run({speed}, "2ep");
  Trainer trainer(run.options);
  trainer.fit();
  const auto sps = run.memory->series("throughput/samples_per_sec");
  ASSERT_EQ(sps.size(), 12U);
  EXPECT_GT(sps.back().second, 0.0);
  EXPECT_EQ(run.memory->series("wall_clock/epoch_s").size(), 2U);
  EXPECT_GT(dynamic_cast<SpeedMonitor*>(speed.get())->multiply_adds(), 1e6);
  const double flops = *run.memory->latest("throughput/flops_per_sec");
  EXPECT_NEAR(flops / sps.back().second, 6.0 * dynamic_cast<SpeedMonitor*>(speed.get())->multiply_adds(), 1.0);
}

TEST(LrMonitor, LogsTheScheduledRate) {
  SmallRun run({make_callback("lr_monitor")}, "4ba", 0.25);
  Trainer trainer(run.options);
  trainer.fit();
  const auto lr = run.memory->series("lr-optimizer/group0");
  ASSERT_EQ(lr.size(), 4U);
  EXPECT_DOUBLE_EQ(lr.front().second, 0.25);
}

TEST(OptimizerMonitor, LogsGradientAndParameterNorms) {
  SmallRun run({make_callback("optimizer_monitor", {{"per_layer", true}})}, "2ba");
  Trainer trainer(run.options);
  trainer.fit();
  EXPECT_EQ(run.memory->series("optimizer/grad_l2_norm").size(), 2U);
  EXPECT_GT(*run.memory->latest("optimizer/grad_l2_norm"), 0.0);
  double sq = 0;
  for (const auto& p : run.model->parameters()) sq += p.detach().pow(2).sum().item<double>();
  // Logged before the step: close to, not equal to, the norm after it.
  EXPECT_NEAR(*run.memory->latest("optimizer/param_l2_norm"), std::sqrt(sq), 0.05 * std::sqrt(sq));
  EXPECT_TRUE(run.memory->latest("optimizer/grad_l2_norm/module.c1.weight"));
}

TEST(MemoryMonitor, LogsResidentMemory) {
  SmallRun run({make_callback("memory_monitor", {{"interval", 2}})}, "4ba");
  Trainer trainer(run.options);
  trainer.fit();
  ASSERT_EQ(run.memory->series("memory/rss_mb").size(), 2U);
  EXPECT_GT(*run.memory->latest("memory/rss_mb"), 10.0);
  EXPECT_GE(*run.memory->latest("memory/peak_rss_mb"), *run.memory->latest("memory/rss_mb"));
}

TEST(NanMonitor, StopsAtTheFirstNanLossNamingTheStepAndKeepsCheckpoints) {
  const baton::testing::TempDir dir_tmp("nan");
  const std::filesystem::path dir = dir_tmp.path();
  baton::remove_tree(dir);
  // A loss that turns NaN at the 4th batch.
  auto poison = std::make_shared<LambdaCallback>(
      std::map<Event, LambdaCallback::Hook>{{Event::kAfterLoss, [](State& s, Logger&) {
                                               if (s.timestamp.batch() == 3)
                                                 s.loss = s.loss * std::numeric_limits<double>::quiet_NaN();
                                             }}});
  SmallRun run({poison, make_callback("nan_monitor")}, "6ba");
  run.options.save_folder(dir.string()).save_interval("2ba");
  Trainer trainer(run.options);
  EXPECT_THAT(testing::error_of([&] { trainer.fit(); }),
              HasSubstr("nan_monitor: the loss is nan at batch 4 (epoch 0)"));
  trainer.close();
  EXPECT_TRUE(std::filesystem::exists(dir / "ep0-ba2.ckpt"));
  baton::remove_tree(dir);
}

TEST(RuntimeEstimator, EstimatesTheTimeLeft) {
  auto estimator = make_callback("runtime_estimator");
  SmallRun run({estimator}, "8ba");
  Trainer trainer(run.options);
  trainer.fit();
  const auto left = run.memory->series("time/remaining_estimate_s");
  ASSERT_EQ(left.size(), 8U);
  EXPECT_GT(left[3].second, 0.0);
  EXPECT_DOUBLE_EQ(left.back().second, 0.0);
}

TEST(FreeOutputsAndLambda, OutputsAreDroppedAfterTheLoss) {
  bool outputs_at_backward = true;
  auto probe = std::make_shared<LambdaCallback>(std::map<Event, LambdaCallback::Hook>{
      {Event::kBeforeBackward, [&](State& s, Logger&) { outputs_at_backward = s.outputs.defined(); }}});
  SmallRun run({make_callback("free_outputs"), probe}, "1ba");
  Trainer trainer(run.options);
  trainer.fit();
  EXPECT_FALSE(outputs_at_backward);
}

}  // namespace
}  // namespace baton
