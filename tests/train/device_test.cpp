// The trainer's device handling that needs no GPU: which device a run takes and the errors for one it
// cannot use, losses kept on the device until logged, and checkpoints that hold no device.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <caffe2/serialize/inline_container.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/core/device.h"
#include "baton/train/checkpoint.h"
#include "baton/train/threads.h"
#include "baton/train/trainer.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton {
namespace {

using ::testing::AnyOf;
using testing::error_of;
using ::testing::HasSubstr;
using testing::small_options;

TEST(TrainerDevice, AutoTakesTheCpuWithoutAGpuAndPutsTheModelThere) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a GPU (the gpu label covers it)";
  Trainer trainer(small_options());
  EXPECT_EQ(trainer.device(), c10::Device(c10::kCPU));
  EXPECT_EQ(trainer.state().device, c10::Device(c10::kCPU));
  for (const auto& p : trainer.state().model->parameters()) EXPECT_TRUE(p.is_cpu());
}

TEST(TrainerDevice, ADeviceItCannotUseIsAOneLineError) {
  const std::string tpu = error_of([] { Trainer t(small_options().device("tpu")); });
  EXPECT_THAT(tpu, HasSubstr("TrainerOptions: device 'tpu': unknown device (expected auto, cpu, cuda or cuda:N)"));
  EXPECT_EQ(tpu.find('\n'), std::string::npos);
  const std::string seventh = error_of([] { Trainer t(small_options().device("cuda:7")); });
  EXPECT_THAT(seventh, HasSubstr("TrainerOptions: device 'cuda:7': "));
  if (cuda_device_count() == 0) {
    EXPECT_THAT(seventh, AnyOf(HasSubstr("this baton's LibTorch has no CUDA"), HasSubstr("has no CUDA device")));
  } else if (cuda_device_count() < 8) {
    EXPECT_THAT(seventh, HasSubstr("this machine has " + std::to_string(cuda_device_count()) + " CUDA device"));
  }
}

TEST(TrainerDevice, Float16NeedsACudaDevice) {
  const std::string why = error_of([] { Trainer t(small_options().device("cpu").precision(Precision::kAmpFp16)); });
  EXPECT_THAT(why, HasSubstr("precision amp_fp16 needs a CUDA device"));
  EXPECT_THAT(why, HasSubstr("use amp_bf16 or fp32"));
}

TEST(TrainerDevice, BadLogIntervalIsRefused) {
  EXPECT_THAT(error_of([] { Trainer t(small_options().log_interval(0)); }),
              HasSubstr("log_interval must be at least 1"));
}

// Records when train/loss reaches the loggers, against the batches the trainer has finished.
class LossRecorder : public LoggerDestination {
 public:
  void batch_end(State& state, Logger&) override { batches_done = state.timestamp.batch(); }
  void log_metrics(const Metrics& metrics, int64_t step) override {
    if (auto it = metrics.find("train/loss"); it != metrics.end()) {
      losses.emplace_back(step, it->second);
      seen_at.push_back(batches_done);
    }
  }
  int64_t batches_done = 0;
  std::vector<std::pair<int64_t, double>> losses;  // (step, value)
  std::vector<int64_t> seen_at;                    // batches done when it was logged
};

TEST(TrainerDevice, LossesStayOnTheDeviceUntilTheLogIntervalAndAreAllLoggedWithTheirSteps) {
  auto every = std::make_shared<LossRecorder>();
  {
    torch::manual_seed(0);
    Trainer t(small_options(96, 16).max_duration("6ba").eval_interval("0ep").device("cpu").loggers({every}));
    t.fit();
  }
  auto grouped = std::make_shared<LossRecorder>();
  torch::manual_seed(0);
  Trainer t(
      small_options(96, 16).max_duration("6ba").eval_interval("0ep").device("cpu").log_interval(4).loggers({grouped}));
  t.fit();
  // Every batch's loss, in order and with its own step, equal to reading each one at once.
  ASSERT_EQ(grouped->losses.size(), 6u);
  EXPECT_EQ(grouped->losses, every->losses);
  // Read in groups: batches 1-4 once the fourth was done (before its batch_end), 5-6 at the end of fit.
  EXPECT_EQ(grouped->seen_at, (std::vector<int64_t>{3, 3, 3, 3, 6, 6}));
  EXPECT_EQ(every->seen_at, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_DOUBLE_EQ(t.summary().train_loss, grouped->losses.back().second);
}

TEST(TrainerDevice, ALossReadLaterStillNamesTheBatchThatWasNaN) {
  struct PoisonLoss : Algorithm {
    bool match(Event e, const State& s) override { return e == Event::kAfterLoss && s.timestamp.batch() == 2; }
    std::optional<int> apply(Event, State& s, Logger&) override {
      s.loss = s.loss * std::numeric_limits<double>::quiet_NaN();
      return std::nullopt;
    }
  };
  Trainer trainer(small_options().max_duration("1ep").eval_interval("0ep").log_interval(4).algorithms(
      {std::make_shared<PoisonLoss>()}));
  EXPECT_THAT([&] { trainer.fit(); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("train/loss is nan at batch 3 (epoch 0)")));
  EXPECT_EQ(trainer.state().timestamp.batch(), 3);  // found when the fourth batch's loss was read
}

}  // namespace
}  // namespace baton
