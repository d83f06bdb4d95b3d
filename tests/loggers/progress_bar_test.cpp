// The progress bar and the console logger (src/loggers/progress_bar.cpp): what they print, on a terminal and off one.
#include <cstdio>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/loggers/progress_bar.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/trainer.h"

namespace baton {
namespace {

// Runs 120 batches (3 epochs of 40, evaluation every epoch) with `logger` and returns what it printed.
std::string run_with(const std::function<std::shared_ptr<LoggerDestination>(std::FILE*)>& make) {
  std::FILE* out = std::tmpfile();
  auto gen = at::detail::createCPUGenerator(1);
  auto data =
      std::make_shared<TensorDataset>(torch::randn({320, 6}, gen), torch::randint(0, 3, {320}, gen, torch::kLong));
  torch::manual_seed(0);
  auto model = make_model("mlp", ModelOptions().input_shape({6}).num_classes(3).hidden({8}));
  Trainer trainer(TrainerOptions()
                      .model(model)
                      .train_dataloader(std::make_shared<DataLoader>(data, DataLoaderOptions().batch_size(8)))
                      .eval_dataloader("eval", std::make_shared<DataLoader>(data, DataLoaderOptions().batch_size(64)))
                      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.1), model->parameters())})
                      .loggers({make(out)})
                      .progress_bar(false)
                      .console_log_interval("0ba")
                      .max_duration("3ep"));
  trainer.fit();
  trainer.close();
  std::fflush(out);
  std::rewind(out);
  std::string text;
  char buf[4096];
  while (const std::size_t n = std::fread(buf, 1, sizeof buf, out)) text.append(buf, n);
  std::fclose(out);
  return text;
}

TEST(ProgressBar, OffATerminalPrintsOnePlainLinePerEpochAndEvaluation) {
  const std::string text = run_with([](std::FILE* f) { return std::make_shared<ProgressBar>(f, false); });
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 6);  // 3 epochs + 3 evaluations
  EXPECT_THAT(text, ::testing::HasSubstr("epoch 1 done: 40 batches"));
  EXPECT_THAT(text, ::testing::HasSubstr("eval/accuracy"));
}

TEST(ProgressBar, OnATerminalRedrawsInPlaceAtMostTenTimesASecond) {
  const auto start = std::chrono::steady_clock::now();
  const std::string text = run_with([](std::FILE* f) { return std::make_shared<ProgressBar>(f, true); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto redraws = std::count(text.begin(), text.end(), '\r');
  // One forced draw per epoch end, plus at most one per 100 ms.
  EXPECT_LE(redraws, 3 + static_cast<long>(seconds * 10) + 3);
  EXPECT_GE(redraws, 3);
  EXPECT_THAT(text, ::testing::HasSubstr("epoch 3/3 [####################] 40/40 batches"));
  EXPECT_THAT(text, ::testing::HasSubstr("ETA"));
  EXPECT_THAT(text, ::testing::HasSubstr("eval/accuracy"));  // the last evaluation, on the bar
}

TEST(ConsoleLogger, PrintsTheLatestMetricsEveryInterval) {
  const std::string text =
      run_with([](std::FILE* f) { return std::make_shared<ConsoleLogger>(Time::from_batch(30), f); });
  // Batches 30, 60, 90, 120 and the 3 evaluations.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 7) << text;
  EXPECT_THAT(text, ::testing::HasSubstr("[ba=30]"));
  EXPECT_THAT(text, ::testing::HasSubstr("train/loss"));
}

}  // namespace
}  // namespace baton
