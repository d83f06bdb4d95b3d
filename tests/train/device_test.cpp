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

class CheckpointDevice : public ::testing::Test {
 protected:
  testing::TempDir tmp_{"device"};
  std::string dir_ = tmp_.str();
};

// An OutputArchive's bytes as a GPU would have written them: each storage's location is cuda:0.
std::string as_if_written_on_cuda(const std::string& bytes) {
  std::istringstream in(bytes);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  std::string out;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, std::size_t n) {
      out.append(static_cast<const char*>(data), n);
      return n;
    });
    int relocated = 0;
    for (const std::string& name : reader.getAllRecords()) {
      // The writer adds its own version records.
      if (name.find("version") != std::string::npos || name.find("byteorder") != std::string::npos ||
          name.find("serialization_id") != std::string::npos) {
        continue;
      }
      auto [data, size] = reader.getRecord(name);
      std::string record(static_cast<const char*>(data.get()), size);
      if (name.ends_with("data.pkl")) {
        // The pickler writes the location once (BINUNICODE, 4-byte length) and memoizes it.
        const std::string cpu(
            "X\x03\x00\x00\x00"
            "cpu",
            8);
        const std::string cuda(
            "X\x06\x00\x00\x00"
            "cuda:0",
            11);
        for (auto at = record.find(cpu); at != std::string::npos; at = record.find(cpu, at + cuda.size())) {
          record.replace(at, cpu.size(), cuda);
          ++relocated;
        }
      }
      writer.writeRecord(name, record.data(), record.size());
    }
    writer.writeEndOfFile();
    EXPECT_GT(relocated, 0) << "no tensor location found in the archive";
  }
  return out;
}

TEST_F(CheckpointDevice, OptimizerStateWrittenOnAGpuLoadsOnTheCpu) {
  torch::manual_seed(0);
  Trainer gpu_run(small_options(64, 16, /*momentum=*/0.9).max_duration("2ba").eval_interval("0ep").device("cpu"));
  gpu_run.fit();
  StateDict sd = gpu_run.snapshot(/*weights_only=*/false);
  const at::Tensor bytes = sd.tensors.at("optimizers/0").contiguous();
  const std::string relocated = as_if_written_on_cuda(
      std::string(static_cast<const char*>(bytes.data_ptr()), static_cast<std::size_t>(bytes.numel())));
  sd.tensors["optimizers/0"] =
      torch::from_blob(const_cast<char*>(relocated.data()), {static_cast<int64_t>(relocated.size())}, torch::kByte)
          .clone();
  write_checkpoint(dir_ + "/gpu.ckpt", sd, nlohmann::json::object());
  // The momentum buffers come back on the CPU: one more batch gives the same weights as the run that wrote them.
  torch::manual_seed(0);
  Trainer cpu_run(
      small_options(64, 16, 0.9).max_duration("3ba").eval_interval("0ep").device("cpu").load_path(dir_ + "/gpu.ckpt"));
  EXPECT_EQ(cpu_run.state().timestamp.batch(), 2);
  cpu_run.fit();
  gpu_run.fit(Time::parse("3ba"));
  const auto a = gpu_run.state().model->parameters();
  const auto b = cpu_run.state().model->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i]));
}

TEST_F(CheckpointDevice, ACheckpointFileNamesNoDevice) {
  Trainer t(small_options().max_duration("1ba").eval_interval("0ep").device("cpu").save_folder(dir_ + "/run"));
  t.fit();
  const CheckpointFile ckpt = read_checkpoint(dir_ + "/run/latest");
  for (const auto& entry : ckpt.tensors) {
    for (const auto& [key, value] : entry.items()) {
      EXPECT_TRUE(key == "name" || key == "dtype" || key == "shape" || key == "offset" || key == "nbytes") << key;
    }
  }
}

// Run by the test below in a process of its own, with the environment it gives.
TEST(BlasKernels, DISABLED_SaysWhichAndWhetherTheEnvironmentNamesThem) {
  std::printf("kernels: %s; OPENBLAS_CORETYPE %s\n", blas_kernels().c_str(),
              std::getenv("OPENBLAS_CORETYPE") != nullptr ? "set" : "unset");
}

std::string run_test_binary_with(const std::string& environment) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command = environment + " '" + self +
                              "' --gtest_also_run_disabled_tests "
                              "--gtest_filter=BlasKernels.DISABLED_SaysWhichAndWhetherTheEnvironmentNamesThem 2>&1";
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
    ::pclose(pipe);
  }
  return out;
}

// OpenBLAS takes a processor it does not know by its model (a virtual machine's) for a 2004 one;
// loading baton gives it the kernels the processor's instruction sets allow, leaves no
// OPENBLAS_CORETYPE behind for child processes, and a user's OPENBLAS_CORETYPE stands.
TEST(BlasKernels, TheProcessorsInstructionSetsChooseThemUnlessTheUserDid) {
  if (blas_kernels().empty()) GTEST_SKIP() << "LibTorch's BLAS here is not OpenBLAS";
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const std::string chosen = run_test_binary_with("env -u OPENBLAS_CORETYPE");
  EXPECT_THAT(chosen, HasSubstr("kernels: OpenBLAS ")) << chosen;
  EXPECT_THAT(chosen, HasSubstr("OPENBLAS_CORETYPE unset")) << chosen;
  if (avx2) {
    EXPECT_THAT(chosen, ::testing::Not(HasSubstr("Prescott"))) << chosen;
  }
  const std::string users = run_test_binary_with("OPENBLAS_CORETYPE=Prescott");
  EXPECT_THAT(users, HasSubstr("kernels: OpenBLAS Prescott; OPENBLAS_CORETYPE set")) << users;
}

}  // namespace
}  // namespace baton
