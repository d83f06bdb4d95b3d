// What needs a CUDA device (ctest label gpu, make test-gpu). Without one every test is skipped with
// a one-line reason; the same checks that need no device run in the unit label.
#include <dlfcn.h>
#include <execinfo.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/algorithms/registry.h"
#include "baton/callbacks/monitors.h"
#include "baton/core/device.h"
#include "baton/core/grad_scaler.h"
#include "baton/data/shared_batches.h"
#include "baton/loggers/in_memory_logger.h"
#include "baton/models/checkpointing.h"
#include "baton/models/hf.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/optim/scheduler.h"
#include "baton/train/checkpoint.h"
#include "baton/train/trainer.h"
#include "common/fixtures.h"
#include "common/test_util.h"
#include "cuda/cuda.h"
#include "mpi/comm.h"

namespace baton {
namespace {

using testing::Probe;
using testing::quadrants;

// Skips the test, saying why, where there is no CUDA device.
#define REQUIRE_GPU()                                                                                          \
  do {                                                                                                         \
    if (cuda_device_count() == 0) {                                                                            \
      GTEST_SKIP() << (cuda_built() ? "no CUDA device on this machine"                                         \
                                    : "this baton's LibTorch has no CUDA (make test-gpu builds against one)"); \
    }                                                                                                          \
  } while (false)

const c10::Device kGpu(c10::kCUDA, 0);

// A crash prints what it can before the program dies (the GPU machine has no debugger, and a device
// call is minutes): bench/gpu_run.sh shows it, demangled. The faulting thread and address, the test's
// last phase (set_phase), the unwinder's stack, and, for when the unwinder cannot get past the faulting
// instruction (a call through a bad pointer), the words on the stack that point into code: the return
// addresses of the callers, nearest first. dladdr and snprintf are not async-signal-safe: the process
// is dying anyway.
char g_phase[160] = "start";
void set_phase(const std::string& phase) { std::snprintf(g_phase, sizeof g_phase, "%s", phase.c_str()); }

void say(const char* text) { [[maybe_unused]] const auto written = write(STDERR_FILENO, text, std::strlen(text)); }

extern "C" void print_stack_and_die(int signal, siginfo_t* info, void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  const auto pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  const auto* sp = reinterpret_cast<const uintptr_t*>(uc->uc_mcontext.gregs[REG_RSP]);
  char line[400];
  std::snprintf(line, sizeof line,
                "gpu_tests: crashed (signal %d) at pc %#lx reading %p, thread %ld (main %d), phase: %s\n", signal,
                static_cast<unsigned long>(pc), info->si_addr, static_cast<long>(syscall(SYS_gettid)),
                static_cast<int>(getpid()), g_phase);
  say(line);
  say("gpu_tests: the stack:\n");
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  say("gpu_tests: the pc and the stack's words that point into code:\n");
  void* code[1] = {reinterpret_cast<void*>(pc)};
  backtrace_symbols_fd(code, 1, STDERR_FILENO);
  int found = 0;
  for (int i = 0; i < 2048 && found < 40; ++i) {  // 16 KiB of the stack, written as found
    Dl_info where{};
    code[0] = reinterpret_cast<void*>(sp[i]);
    if (dladdr(code[0], &where) == 0 || where.dli_sname == nullptr) continue;
    backtrace_symbols_fd(code, 1, STDERR_FILENO);
    ++found;
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}
[[maybe_unused]] const bool kStackOnCrash = [] {
  struct sigaction action {};
  action.sa_sigaction = print_stack_and_die;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  for (const int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(s, &action, nullptr);
  return true;
}();

TrainerOptions gpu_options(const std::string& model_name = "fashion_cnn", int64_t n = 256) {
  torch::manual_seed(0);
  auto model = make_model(model_name, ModelOptions().input_shape({1, 16, 16}).num_classes(4));
  return TrainerOptions()
      .device("cuda")
      .model(model)
      .train_dataloader(std::make_shared<DataLoader>(quadrants(n, 1), DataLoaderOptions().batch_size(32).seed(3)))
      .eval_dataloader(
          "eval", std::make_shared<DataLoader>(quadrants(64, 2), DataLoaderOptions().batch_size(32).shuffle(false)))
      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.05).momentum(0.9), model->parameters())})
      .progress_bar(false)
      .console_log_interval("0ba")
      .eval_interval("0ep");
}

// A callback that names each event as the test's phase (what the crash handler prints).
std::shared_ptr<Probe> phase_probe(const std::string& trainer) {
  return std::make_shared<Probe>([trainer](Event e, State& s) {
    set_phase(trainer + ": " + std::string(to_string(e)) + " at batch " + std::to_string(s.timestamp.batch()));
  });
}

std::vector<at::Tensor> weights(Trainer& t) {
  std::vector<at::Tensor> out;
  for (const auto& p : t.state().model->parameters()) out.push_back(p.detach().to(torch::kCPU).clone());
  return out;
}

bool equal(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

// No device needed (make check-torch2 runs it against the PyTorch wheel's LibTorch): the wheel's
// libtorch.so carries its own std::filesystem::remove_all, which jumps to address 0 on a folder that
// holds anything when it is found before libstdc++'s (cmake/torch.cmake puts libstdc++ first).
TEST(Linking, RemovingAFolderOfFilesUsesTheSystemsLibstdcxx) {
  const baton::testing::TempDir dir("linking");
  const std::filesystem::path root = dir.path() / "run";
  std::filesystem::create_directories(root / "a" / "b");
  testing::write_file((root / "a" / "b" / "f.txt").string(), "x");
  testing::write_file((root / "g.txt").string(), "y");
  EXPECT_EQ(std::filesystem::remove_all(root), 5u);
  EXPECT_FALSE(std::filesystem::exists(root));
}

TEST(Gpu, ModelBatchesOptimizerStateAlgorithmsAndMetricsLiveOnTheDevice) {
  REQUIRE_GPU();
  int checked = 0;
  auto probe = std::make_shared<Probe>([&](Event e, State& s) {
    if (e == Event::kAfterForward || e == Event::kEvalAfterForward) {
      EXPECT_TRUE(s.batch.input.is_cuda() && s.batch.target.is_cuda() && s.outputs.is_cuda()) << to_string(e);
      ++checked;
    }
    if (e == Event::kAfterLoss) {
      EXPECT_TRUE(s.loss.is_cuda());
    }
  });
  TrainerOptions o = gpu_options().max_duration("3ep").eval_interval("1ep").callbacks({probe}).algorithms(
      {make_algorithm("ema", {{"half_life", "5ba"}}), make_algorithm("label_smoothing")});
  Trainer trainer(o);
  EXPECT_EQ(trainer.device(), kGpu);
  trainer.fit();
  EXPECT_GT(checked, 24);
  for (const auto& p : trainer.state().model->parameters()) EXPECT_TRUE(p.is_cuda());
  const StateDict sd = trainer.snapshot(/*weights_only=*/false);
  for (const auto& [name, tensor] : sd.tensors) {
    if (name.rfind("algorithms/", 0) == 0) {
      EXPECT_TRUE(tensor.is_cuda()) << name;  // EMA's average
    }
  }
  EXPECT_TRUE(sd.tensors.count("rng/cuda"));
  EXPECT_GT(trainer.state().eval_metrics["eval"]["accuracy"], 0.9);
}

TEST(Gpu, EveryAlgorithmOfTheLibraryTrainsOnTheDevice) {
  REQUIRE_GPU();
  for (const std::string& name : algorithm_names()) {
    if (name == "lora") continue;  // adapts a Hugging Face model's layers, not resnet20's
    for (Precision precision : {Precision::kFp32, Precision::kAmpBf16}) {
      SCOPED_TRACE(name + " " + std::string(to_string(precision)));
      TrainerOptions o =
          gpu_options("resnet20", 128).max_duration("4ba").precision(precision).algorithms({make_algorithm(name)});
      if (name == "single_path") {  // samples paths of a one-shot supernet (cnn_space's)
        auto supernet =
            make_model("cnn_space", ModelOptions()
                                        .input_shape({1, 16, 16})
                                        .num_classes(4)
                                        .one_shot(true)
                                        .arch({{"stage1_width", 16}, {"stage2_width", 16}, {"stage3_width", 16}}));
        o.model(supernet).optimizers(
            {make_optimizer(OptimizerOptions().name("sgd").lr(0.05).momentum(0.9), supernet->parameters())});
      }
      Trainer trainer(o);
      trainer.fit();
      EXPECT_TRUE(std::isfinite(trainer.summary().train_loss));
      for (const auto& p : trainer.state().model->parameters()) EXPECT_TRUE(p.is_cuda());
      EXPECT_GE(trainer.eval().at("eval").at("accuracy"), 0.0);
    }
  }
}

// A forced overflow at the third step: that step is skipped and the scale halves, whatever the
// steps before did (an early step may overflow on its own at 2^16 and have halved it already).
TEST(Gpu, Float16ScalingSkipsAnOverflowedStepAndTrains) {
  REQUIRE_GPU();
  std::vector<at::Tensor> before_step_3;
  int64_t skipped_before = -1;
  double scale_before = 0;
  auto overflow = std::make_shared<Probe>([&](Event e, State& s) {
    if (e == Event::kBatchStart && s.timestamp.batch() == 2) {
      for (const auto& p : s.model->parameters()) before_step_3.push_back(p.detach().clone());
      skipped_before = s.grad_scaler->skipped_steps();
      scale_before = s.grad_scaler->get_scale();
    }
    if (e == Event::kAfterBackward && s.timestamp.batch() == 2) {
      s.model->parameters()[0].mutable_grad().view(-1)[0] = std::numeric_limits<float>::infinity();
    }
    if (e == Event::kBatchEnd && s.timestamp.batch() == 3) {  // the third step was skipped
      const auto now = s.model->parameters();
      for (std::size_t i = 0; i < now.size(); ++i) EXPECT_TRUE(torch::equal(now[i], before_step_3[i]));
      EXPECT_EQ(s.grad_scaler->skipped_steps(), skipped_before + 1);
      EXPECT_DOUBLE_EQ(s.grad_scaler->get_scale(), scale_before * 0.5);
    }
  });
  Trainer trainer(
      gpu_options().precision(Precision::kAmpFp16).max_duration("4ep").eval_interval("4ep").callbacks({overflow}));
  trainer.fit();
  ASSERT_NE(trainer.state().grad_scaler, nullptr);
  ASSERT_GE(skipped_before, 0);
  EXPECT_GE(trainer.state().grad_scaler->skipped_steps(), 1);
  EXPECT_GT(trainer.state().eval_metrics["eval"]["accuracy"], 0.9);
  // Its state is in the checkpoint.
  EXPECT_EQ(trainer.snapshot(false).values.at("grad_scaler").at("skipped"),
            trainer.state().grad_scaler->skipped_steps());
}

// The fused unscale (a GPU's) gives what the one-by-one unscale (the CPU's) gives, inf found alike.
TEST(Gpu, TheFusedUnscaleMatchesTheOneByOneUnscale) {
  REQUIRE_GPU();
  for (const bool with_inf : {false, true}) {
    torch::manual_seed(0);
    std::vector<at::Tensor> cpu = {torch::randn({5, 3}), torch::randn({7}), torch::randn({2, 2}).to(torch::kDouble)};
    if (with_inf) cpu[1][3] = std::numeric_limits<float>::infinity();
    auto make = [](std::vector<at::Tensor> grads, c10::Device d) {
      std::vector<at::Tensor> params;
      for (auto& g : grads) {
        params.push_back(torch::zeros_like(g).to(d).requires_grad_(true));
        params.back().mutable_grad() = g.clone().to(d);
      }
      return params;
    };
    auto on_cpu = make(cpu, torch::kCPU), on_gpu = make(cpu, kGpu);
    torch::optim::SGD sgd_cpu(on_cpu, 0.1), sgd_gpu(on_gpu, 0.1);
    GradScaler a(GradScalerOptions().init_scale(1024.0)), b(GradScalerOptions().init_scale(1024.0));
    EXPECT_EQ(a.step(sgd_cpu), !with_inf);
    EXPECT_EQ(b.step(sgd_gpu), !with_inf);
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      EXPECT_TRUE(torch::allclose(on_cpu[i].grad(), on_gpu[i].grad().cpu(), 0, 0, /*equal_nan=*/true)) << i;
    }
  }
}

TEST(Gpu, ACheckpointGoesGpuToCpuToGpu) {
  REQUIRE_GPU();
  const baton::testing::TempDir dir_tmp("gpu");
  const std::filesystem::path dir = dir_tmp.path();
  baton::remove_tree(dir);
  Trainer gpu(gpu_options().max_duration("3ba").save_folder((dir / "gpu").string()).save_interval("3ba"));
  gpu.fit();
  Trainer cpu(gpu_options().device("cpu").max_duration("5ba").load_path((dir / "gpu" / "latest").string()));
  EXPECT_EQ(cpu.device(), c10::Device(c10::kCPU));
  EXPECT_TRUE(equal(weights(cpu), weights(gpu)));
  cpu.fit();  // momentum buffers came to the CPU with the weights
  EXPECT_TRUE(std::isfinite(cpu.summary().train_loss));
  cpu.save_checkpoint((dir / "cpu.ckpt").string());
  set_phase("ACheckpointGoesGpuToCpuToGpu: back loads cpu.ckpt");
  Trainer back(
      gpu_options().max_duration("7ba").load_path((dir / "cpu.ckpt").string()).callbacks({phase_probe("back")}));
  set_phase("ACheckpointGoesGpuToCpuToGpu: back loaded");
  EXPECT_EQ(back.device(), kGpu);
  EXPECT_TRUE(equal(weights(back), weights(cpu)));
  back.fit();
  EXPECT_EQ(back.state().timestamp.batch(), 7);
  baton::remove_tree(dir);
}

TEST(Gpu, DeterministicResumeOnTheDeviceIsBitwise) {
  REQUIRE_GPU();
  const baton::testing::TempDir dir_tmp("gpu-resume");
  const std::filesystem::path dir = dir_tmp.path();
  baton::remove_tree(dir);
  auto options = [&](const std::string& folder) {
    return gpu_options().deterministic(true).algorithms({make_algorithm("mixup")}).save_folder((dir / folder).string());
  };
  Trainer uninterrupted(options("a").max_duration("12ba"));
  uninterrupted.fit();
  {
    Trainer first(options("b").max_duration("5ba").save_interval("5ba"));
    first.fit();
  }
  set_phase("DeterministicResumeOnTheDeviceIsBitwise: resumed loads");
  Trainer resumed(options("b").max_duration("12ba").autoresume(true).callbacks({phase_probe("resumed")}));
  set_phase("DeterministicResumeOnTheDeviceIsBitwise: resumed loaded");
  EXPECT_EQ(resumed.state().timestamp.batch(), 5);
  resumed.fit();
  EXPECT_TRUE(equal(weights(resumed), weights(uninterrupted)));
  baton::remove_tree(dir);
}

// SGD in fp32, Adam and AdamW under bf16 autocast, eager and from graphs.
TEST(Gpu, TheTrainingLoopNeverWaitsForTheDevice) {
  REQUIRE_GPU();
  // LibTorch's sync debug mode throws at any call that makes the host wait for the device.
  auto strict = std::make_shared<Probe>([](Event e, State& s) {
    if (e == Event::kBatchStart && s.timestamp.batch() == 2) cuda::set_sync_errors(true);
    if (e == Event::kBatchEnd && s.timestamp.batch() == 20) cuda::set_sync_errors(false);
  });
  struct Case {
    const char* optimizer;
    Precision precision;
    CudaGraphs graphs;
  };
  for (const Case c :
       {Case{"sgd", Precision::kFp32, CudaGraphs::kOff}, Case{"adam", Precision::kAmpBf16, CudaGraphs::kOff},
        Case{"adamw", Precision::kAmpBf16, CudaGraphs::kOff}, Case{"adamw", Precision::kAmpBf16, CudaGraphs::kOn}}) {
    SCOPED_TRACE(std::string(c.optimizer) + " " + std::string(to_string(c.precision)) +
                 (c.graphs == CudaGraphs::kOn ? " graphs" : " eager"));
    TrainerOptions o = gpu_options("fashion_cnn", 1024).max_duration("24ba").log_interval(100).callbacks({strict});
    o.precision(c.precision).cuda_graphs(c.graphs);
    o.optimizers(
        {make_optimizer(OptimizerOptions().name(c.optimizer).lr(c.optimizer == std::string("sgd") ? 0.05 : 1e-3),
                        o.model()->parameters())});
    Trainer trainer(o);
    EXPECT_NO_THROW(trainer.fit());
    cuda::set_sync_errors(false);
    EXPECT_TRUE(std::isfinite(trainer.summary().train_loss));
    if (c.graphs == CudaGraphs::kOn) {
      EXPECT_GT(trainer.summary().graph_steps, 15);
    }
  }
}

// data.on_device: the examples on the GPU, each batch one gather there; the same order and the
// same values as batches copied from the CPU, so the same weights, bitwise.
TEST(Gpu, DataOnTheDeviceTrainsAsDataCopiedFromTheCpu) {
  REQUIRE_GPU();
  Trainer copied(gpu_options().deterministic(true).max_duration("12ba"));
  copied.fit();
  TrainerOptions o = gpu_options().deterministic(true).max_duration("12ba");
  o.train_dataloader(
      std::make_shared<DataLoader>(quadrants(256, 1)->to(kGpu), DataLoaderOptions().batch_size(32).seed(3)));
  int on_gpu = 0;
  o.callbacks({std::make_shared<Probe>([&](Event e, State& s) {
    if (e == Event::kAfterDataloader && s.batch.input.is_cuda() && s.batch.target.is_cuda()) ++on_gpu;
  })});
  Trainer on_device(o);
  on_device.fit();
  EXPECT_EQ(on_gpu, 12);
  EXPECT_TRUE(equal(weights(on_device), weights(copied)));
}

// fp16 with loss scaling under SAM (two backwards a step), gradient clipping (of unscaled
// gradients) and 4 microbatches a batch: it trains, and the microbatched run follows the plain one.
TEST(Gpu, Float16WithSamClippingAndMicrobatchesTrains) {
  REQUIRE_GPU();
  auto options = [](std::optional<int64_t> microbatch) {
    return gpu_options()
        .precision(Precision::kAmpFp16)
        .max_duration("3ep")
        .device_train_microbatch_size(microbatch)
        .algorithms({make_algorithm("sam", {{"rho", 0.05}}),
                     make_algorithm("gradient_clipping", {{"clipping_type", "norm"}, {"clipping_threshold", 1.0}})});
  };
  Trainer plain(options(std::nullopt));
  plain.fit();
  Trainer split(options(8));
  split.fit();
  for (Trainer* t : {&plain, &split}) {
    EXPECT_TRUE(std::isfinite(t->summary().train_loss));
    for (const auto& p : t->state().model->parameters()) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
    EXPECT_GT(t->eval().at("eval").at("accuracy"), 0.8);
  }
  EXPECT_NEAR(plain.summary().train_loss, split.summary().train_loss, 0.1);
}

// cuda:N names the Nth GPU; past the last it is refused with how many there are. With two GPUs, a
// run on the second keeps everything there, graphs included.
TEST(Gpu, CudaNNamesTheNthGpu) {
  REQUIRE_GPU();
  const int gpus = cuda_device_count();
  EXPECT_EQ(parse_device("cuda:0"), kGpu);
  EXPECT_EQ(parse_device("cuda:" + std::to_string(gpus - 1)), c10::Device(c10::kCUDA, gpus - 1));
  EXPECT_THAT([&] { parse_device("cuda:" + std::to_string(gpus)); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr(
                  "this machine has " + std::to_string(gpus) + " CUDA device" + (gpus == 1 ? " (cuda:0)" : "s"))));
  EXPECT_THROW(Trainer(gpu_options().device("cuda:" + std::to_string(gpus))), std::invalid_argument);
  if (gpus < 2) GTEST_SKIP() << "one GPU: cuda:1 cannot train here (the refusal above is checked)";
  const c10::Device second(c10::kCUDA, 1);
  Trainer trainer(gpu_options().cuda_graphs(CudaGraphs::kOn).device("cuda:1").max_duration("12ba"));
  trainer.fit();
  EXPECT_EQ(trainer.device(), second);
  EXPECT_GT(trainer.summary().graph_steps, 5);
  for (const auto& p : trainer.state().model->parameters()) EXPECT_EQ(p.device(), second);
  EXPECT_TRUE(std::isfinite(trainer.summary().train_loss));
}

TEST(Gpu, MonitorsReportTheDevicesSpeedAndMemory) {
  REQUIRE_GPU();
  auto metrics = std::make_shared<InMemoryLogger>();
  Trainer trainer(gpu_options().max_duration("2ep").loggers({metrics}).callbacks(
      {std::make_shared<SpeedMonitor>(SpeedMonitorOptions().window_size(4)), std::make_shared<MemoryMonitor>()}));
  trainer.fit();
  EXPECT_EQ(metrics->series("memory/cuda_peak_mb").size(), 2U);  // per epoch
  EXPECT_GT(metrics->latest("memory/cuda_allocated_mb").value_or(0.0), 0.0);
  EXPECT_GE(metrics->latest("memory/cuda_reserved_mb").value_or(0.0),
            metrics->latest("memory/cuda_allocated_mb").value_or(1.0));
  EXPECT_GE(metrics->latest("memory/cuda_peak_mb").value_or(0.0),
            metrics->latest("memory/cuda_allocated_mb").value_or(1.0));
  EXPECT_GT(metrics->latest("throughput/samples_per_sec").value_or(0.0), 0.0);
}

TEST(Gpu, DataParallelOverNcclOnOneRankMatchesPlainTraining) {
  REQUIRE_GPU();
  if (!mpi::built()) GTEST_SKIP() << "built without MPI";
  if (!cuda::nccl_built()) GTEST_SKIP() << "built without NCCL";
  Trainer plain(gpu_options().deterministic(true).max_duration("6ba"));
  plain.fit();
  Trainer nccl(gpu_options()
                   .deterministic(true)
                   .max_duration("6ba")
                   .distributed(Distributed::kOn)
                   .ddp_backend(DdpBackend::kNccl));
  nccl.fit();
  EXPECT_TRUE(equal(weights(nccl), weights(plain)));
}

// Sharding on one GPU rank through NCCL (the units' gathers on its stream, the next one's while one
// computes; the gradients reduce-scattered there, added over microbatches) and through MPI (staged
// in host memory): the weights of plain training within rounding (attention's backward on the GPU
// is not deterministic), with activation checkpointing too.
TEST(Gpu, ShardingOverNcclAndMpiOnOneRankMatchesPlainTraining) {
  REQUIRE_GPU();
  if (!mpi::built()) GTEST_SKIP() << "built without MPI";
  const auto options = [](Sharding sharding, DdpBackend backend, bool recompute) {
    torch::manual_seed(0);
    auto model =
        make_model("gpt", ModelOptions().input_shape({64}).num_classes(32).layers(4).width(64).heads(2).dropout(0.0));
    const at::Tensor tokens = torch::randint(0, 32, {64, 65}, torch::kLong);
    auto data = std::make_shared<TensorDataset>(tokens.slice(1, 0, 64).contiguous(), tokens.slice(1, 1).contiguous());
    TrainerOptions o;
    o.device("cuda")
        .model(model)
        .train_dataloader(std::make_shared<DataLoader>(data, DataLoaderOptions().batch_size(16).seed(1)))
        .optimizers({make_optimizer(OptimizerOptions().name("adamw").lr(1e-3).weight_decay(0.1), model->parameters())})
        .device_train_microbatch_size(8)
        .max_duration("8ba")
        .eval_interval("0ep")
        .progress_bar(false)
        .console_log_interval("0ba");
    if (sharding != Sharding::kNone) o.distributed(Distributed::kOn).ddp_backend(backend).sharding(sharding);
    if (recompute) o.activation_checkpointing({"auto"});
    return o;
  };
  Trainer plain(options(Sharding::kNone, DdpBackend::kAuto, false));
  plain.fit();
  std::vector<std::tuple<Sharding, DdpBackend, bool>> cases = {{Sharding::kFull, DdpBackend::kMpi, false},
                                                               {Sharding::kGradients, DdpBackend::kMpi, false}};
  if (cuda::nccl_built()) {
    cases.insert(cases.end(), {{Sharding::kFull, DdpBackend::kNccl, false},
                               {Sharding::kFull, DdpBackend::kNccl, true},
                               {Sharding::kOptimizer, DdpBackend::kNccl, false},
                               {Sharding::kGradients, DdpBackend::kNccl, false}});
  }
  for (const auto& [sharding, backend, recompute] : cases) {
    Trainer sharded(options(sharding, backend, recompute));
    sharded.fit();
    const auto a = weights(sharded), b = weights(plain);
    ASSERT_EQ(a.size(), b.size());
    for (const auto& p : sharded.state().model->parameters()) EXPECT_TRUE(p.is_cuda());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_LT((a[i] - b[i]).abs().max().item<double>(), 1e-5)
          << to_name(sharding) << (backend == DdpBackend::kNccl ? " nccl" : " mpi") << (recompute ? " recomputed" : "")
          << " parameter " << i;
    }
    if (sharding == Sharding::kFull && backend == DdpBackend::kMpi) {
      EXPECT_GT(sharded.gather_wait_seconds(), 0.0);
    }
  }
}

// Data parallelism over MPI with the gradients' buckets on the GPU (copied to the host for the
// reduction and back): on one rank, the weights of plain training, bitwise.
TEST(Gpu, DataParallelOverMpiWithGpuBucketsMatchesPlainTraining) {
  REQUIRE_GPU();
  if (!mpi::built()) GTEST_SKIP() << "built without MPI";
  Trainer plain(gpu_options().deterministic(true).max_duration("6ba"));
  plain.fit();
  Trainer over_mpi(gpu_options()
                       .deterministic(true)
                       .max_duration("6ba")
                       .distributed(Distributed::kOn)
                       .ddp_backend(DdpBackend::kMpi));
  over_mpi.fit();
  EXPECT_TRUE(equal(weights(over_mpi), weights(plain)));
}

// ---- CUDA graphs ----

// 200 steps of SGD with Nesterov momentum and weight decay under one_cycle (the learning rate and
// momentum change every step), or AdamW under cosine warm-up, with graphs on or off.
TrainerOptions graph_options(CudaGraphs mode, const std::string& optimizer, Precision precision = Precision::kFp32) {
  TrainerOptions o = gpu_options().max_duration("200ba").cuda_graphs(mode).deterministic(true).precision(precision);
  auto params = o.model()->parameters();
  if (optimizer == "sgd") {
    o.optimizers({make_optimizer(
        OptimizerOptions().name("sgd").lr(0.05).momentum(0.9).nesterov(true).weight_decay(5e-4), params)});
    o.schedulers({make_scheduler(SchedulerOptions().name("one_cycle").max_lr(0.1))});
  } else {  // adam or adamw
    o.optimizers({make_optimizer(
        OptimizerOptions().name(optimizer).lr(1e-3).weight_decay(optimizer == "adamw" ? 0.1 : 0.0), params)});
    o.schedulers({make_scheduler(SchedulerOptions().name("cosine_warmup").t_warmup(Time::from_batch(20)))});
  }
  return o;
}

double max_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  return worst;
}

TEST(Gpu, GraphsGiveTheWeightsOfEagerTrainingAfter200Steps) {
  REQUIRE_GPU();
  for (const std::string optimizer : {"sgd", "adamw"}) {
    SCOPED_TRACE(optimizer);
    Trainer eager(graph_options(CudaGraphs::kOff, optimizer));
    eager.fit();
    Trainer graphed(graph_options(CudaGraphs::kOn, optimizer));
    graphed.fit();
    EXPECT_EQ(eager.summary().graph_steps, 0);
    EXPECT_GT(graphed.summary().graph_steps, 190);  // all but the warm-up steps (and a short last batch's)
    EXPECT_LT(max_difference(weights(eager), weights(graphed)), 1e-5);
    EXPECT_NEAR(eager.summary().train_loss, graphed.summary().train_loss, 1e-4);
  }
}

// Adam and AdamW under bf16 autocast: graphs follow eager training (the forward in bf16 rounds
// alike; the steps differ by an fma's rounding, which bf16 magnifies).
TEST(Gpu, GraphsWithAdamUnderBf16FollowEagerTraining) {
  REQUIRE_GPU();
  for (const std::string optimizer : {"adam", "adamw"}) {
    SCOPED_TRACE(optimizer);
    Trainer eager(graph_options(CudaGraphs::kOff, optimizer, Precision::kAmpBf16));
    eager.fit();
    Trainer graphed(graph_options(CudaGraphs::kOn, optimizer, Precision::kAmpBf16));
    graphed.fit();
    EXPECT_GT(graphed.summary().graph_steps, 190);
    EXPECT_LT(max_difference(weights(eager), weights(graphed)), 5e-2);
    EXPECT_NEAR(eager.summary().train_loss, graphed.summary().train_loss, 5e-2);
    EXPECT_LT(graphed.summary().train_loss, 0.5);
  }
}

// The gpt model from graphs: embeddings' backward (index_put with accumulation), SDPA, dropout. A
// repeating text is learnt; with dropout each replay draws new masks (the losses of one batch
// replayed twice differ), and without it graphs learn it as eager training does.
TEST(Gpu, GraphsTrainTheGptModel) {
  REQUIRE_GPU();
  const at::Tensor pattern = torch::tensor({0, 1, 2, 3, 2, 1}, torch::kLong).repeat({40});
  const at::Tensor starts = torch::arange(0, 192, 1, torch::kLong);
  const at::Tensor rows = starts.unsqueeze(1) + torch::arange(13, torch::kLong);
  const at::Tensor windows = pattern.index_select(0, rows.flatten()).view({192, 13});
  auto data = std::make_shared<TensorDataset>(windows.slice(1, 0, 12).contiguous(), windows.slice(1, 1).contiguous());
  auto options = [&](CudaGraphs mode, double dropout) {
    torch::manual_seed(0);
    auto model = make_model(
        "gpt", ModelOptions().input_shape({12}).num_classes(4).layers(2).width(32).heads(4).dropout(dropout));
    return TrainerOptions()
        .device("cuda")
        .model(model)
        .train_dataloader(std::make_shared<DataLoader>(data, DataLoaderOptions().batch_size(32).seed(1)))
        .optimizers({make_optimizer(OptimizerOptions().name("adamw").lr(1e-2), model->parameters())})
        .max_duration("150ba")
        .eval_interval("0ep")
        .progress_bar(false)
        .console_log_interval("0ba")
        .cuda_graphs(mode);  // not deterministic: LibTorch has no deterministic attention backward
  };
  Trainer learnt(options(CudaGraphs::kOn, 0.1));
  learnt.fit();
  EXPECT_GT(learnt.summary().graph_steps, 140);
  EXPECT_LT(learnt.summary().train_loss, 0.5);  // after its first token the text is certain
  // One batch, in one order, weights that do not move (lr 1e-30): only dropout's masks change the
  // loss from one replay to the next.
  std::vector<double> losses;
  TrainerOptions o =
      options(CudaGraphs::kOn, 0.1).max_duration("30ba").callbacks({std::make_shared<Probe>([&](Event e, State& st) {
        if (e == Event::kAfterLoss) losses.push_back(st.loss.item<double>());
      })});
  const Batch one = data->get_batch(torch::arange(32, torch::kLong));
  o.train_dataloader(std::make_shared<DataLoader>(std::make_shared<TensorDataset>(one.input, one.target),
                                                  DataLoaderOptions().batch_size(32).shuffle(false)));
  o.optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(1e-30), o.model()->parameters())});
  Trainer masks(o);
  masks.fit();
  EXPECT_GT(masks.summary().graph_steps, 20);
  ASSERT_EQ(losses.size(), 30U);
  EXPECT_GT(std::set<double>(losses.begin() + 10, losses.end()).size(), 10U);  // the replays
  Trainer eager(options(CudaGraphs::kOff, 0.0));
  eager.fit();
  Trainer graphed(options(CudaGraphs::kOn, 0.0));
  graphed.fit();
  EXPECT_GT(graphed.summary().graph_steps, 140);
  EXPECT_LT(graphed.summary().train_loss, 0.5);
  EXPECT_NEAR(eager.summary().train_loss, graphed.summary().train_loss, 0.1);
}

// Under graphs every step takes the capturable step's arithmetic, warm-ups included (which a resumed
// run takes again): stopped and resumed, a run ends bitwise as one never stopped.
TEST(Gpu, UnderGraphsAResumedRunEndsBitwiseAsOneNeverStopped) {
  REQUIRE_GPU();
  const baton::testing::TempDir dir_tmp("gpu_resume");
  const std::filesystem::path dir = dir_tmp.path();
  for (const std::string optimizer : {"sgd", "adamw"}) {
    SCOPED_TRACE(optimizer);
    baton::remove_tree(dir);
    Trainer whole(graph_options(CudaGraphs::kOn, optimizer).max_duration("60ba"));
    whole.fit();
    {
      // Stopped after 25 of the 60 batches the schedule counts (as a signal would stop it).
      auto stop = std::make_shared<Probe>([](Event e, State& s) {
        if (e == Event::kBatchEnd && s.timestamp.batch() == 25) s.stop_training();
      });
      Trainer first(
          graph_options(CudaGraphs::kOn, optimizer).max_duration("60ba").save_folder(dir.string()).callbacks({stop}));
      first.fit();
    }
    set_phase("UnderGraphsAResumedRunEndsBitwiseAsOneNeverStopped: resumed loads");
    Trainer resumed(graph_options(CudaGraphs::kOn, optimizer)
                        .max_duration("60ba")
                        .save_folder(dir.string())
                        .autoresume(true)
                        .callbacks({phase_probe("resumed")}));
    set_phase("UnderGraphsAResumedRunEndsBitwiseAsOneNeverStopped: resumed loaded");
    EXPECT_EQ(resumed.state().timestamp.batch(), 25);
    resumed.fit();
    EXPECT_GT(resumed.summary().graph_steps, 20);
    EXPECT_TRUE(equal(weights(whole), weights(resumed)));
  }
  baton::remove_tree(dir);
}

TEST(Gpu, UnderGraphsEveryEventOfTheStepFiresEachBatchWithItsState) {
  REQUIRE_GPU();
  std::map<Event, int> seen;
  std::vector<double> losses;
  auto probe = std::make_shared<Probe>([&](Event e, State& s) {
    ++seen[e];
    if (e == Event::kAfterLoss) losses.push_back(s.loss.item<double>());
    if (e == Event::kAfterBackward) {
      EXPECT_TRUE(s.model->parameters()[0].grad().defined());
    }
  });
  TrainerOptions o = graph_options(CudaGraphs::kOn, "sgd", Precision::kAmpBf16).max_duration("40ba").callbacks({probe});
  // Small steps: the loss still falls at batch 40 (graph_options' one-cycle fits the quadrants to a
  // loss of exactly 0 by then, every replay's the same).
  o.optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.005), o.model()->parameters())}).schedulers({});
  Trainer trainer(o);
  trainer.fit();
  EXPECT_GT(trainer.summary().graph_steps, 30);
  for (Event e : {Event::kBeforeForward, Event::kAfterForward, Event::kBeforeLoss, Event::kAfterLoss,
                  Event::kBeforeBackward, Event::kAfterBackward, Event::kAfterTrainBatch}) {
    EXPECT_EQ(seen[e], 40) << to_string(e);
  }
  ASSERT_EQ(losses.size(), 40u);
  EXPECT_GT(losses[39], 0.0);
  const std::set<double> replays(losses.begin() + 10, losses.end());
  EXPECT_GT(replays.size(), 25u);  // each replay's own loss (its batch's), not the capture's
}

TEST(Gpu, AnAlgorithmInsideTheStepKeepsGraphsOffOrIsAnErrorWhenGraphsAreRequired) {
  REQUIRE_GPU();
  Trainer automatic(
      graph_options(CudaGraphs::kAuto, "sgd").max_duration("10ba").algorithms({make_algorithm("label_smoothing")}));
  automatic.fit();
  EXPECT_EQ(automatic.summary().graph_steps, 0);
  Trainer required(
      graph_options(CudaGraphs::kOn, "sgd").max_duration("10ba").algorithms({make_algorithm("label_smoothing")}));
  EXPECT_THAT([&] { required.fit(); }, ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr(
                                           "LabelSmoothing acts on before_loss, after_loss, inside the train step")));
}

// Stochastic depth under graphs: each replay drops its own blocks. With the learning rate 0 and one
// batch over and over, the loss changes from step to step only through the blocks dropped; a draw
// captured once would give one loss forever.
TEST(Gpu, StochasticDepthDrawsAgainAtEveryGraphReplay) {
  REQUIRE_GPU();
  torch::manual_seed(0);
  auto model = make_model("resnet20", ModelOptions().input_shape({1, 16, 16}).num_classes(4));
  auto one_batch = quadrants(32, 1);
  std::vector<double> losses;
  auto probe = std::make_shared<Probe>([&](Event e, State& s) {
    if (e == Event::kAfterLoss) losses.push_back(s.loss.item<double>());
  });
  TrainerOptions o =
      gpu_options()
          .model(model)
          // One order: only the dropped blocks change the loss (not the sum's order).
          .train_dataloader(std::make_shared<DataLoader>(one_batch, DataLoaderOptions().batch_size(32).shuffle(false)))
          .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(1e-30), model->parameters())})
          .algorithms({make_algorithm("stochastic_depth", {{"drop_rate", 0.5}, {"drop_distribution", "uniform"}})})
          .cuda_graphs(CudaGraphs::kOn)
          .max_duration("30ba")
          .callbacks({probe});
  Trainer trainer(o);
  trainer.fit();
  EXPECT_GT(trainer.summary().graph_steps, 20);
  ASSERT_EQ(losses.size(), 30u);
  std::set<double> distinct(losses.begin() + 10, losses.end());  // the replays
  EXPECT_GT(distinct.size(), 5u);
}

// NanMonitor promises to stop before a NaN loss's backward reaches the weights: under graphs its
// after_loss would run after the replayed step, so it keeps the run eager (auto) or is an error (on).
TEST(Gpu, NanMonitorKeepsGraphsOffSoItsPromiseHolds) {
  REQUIRE_GPU();
  Trainer automatic(
      graph_options(CudaGraphs::kAuto, "sgd").max_duration("10ba").callbacks({std::make_shared<NanMonitor>()}));
  automatic.fit();
  EXPECT_EQ(automatic.summary().graph_steps, 0);
  Trainer required(
      graph_options(CudaGraphs::kOn, "sgd").max_duration("10ba").callbacks({std::make_shared<NanMonitor>()}));
  EXPECT_THAT([&] { required.fit(); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("NanMonitor checks the loss")));
}

// fp32 on a GPU follows PyTorch's defaults unless told: cuDNN's convolutions in TF32, matrix
// products in exact fp32; tf32 true or false sets both.
TEST(Gpu, Tf32FollowsPyTorchsDefaultsUnlessTheRecipeSays) {
  REQUIRE_GPU();
  for (const std::optional<bool> tf32 :
       {std::optional<bool>(), std::optional<bool>(true), std::optional<bool>(false)}) {
    Trainer trainer(gpu_options().tf32(tf32).max_duration("2ba"));
    EXPECT_EQ(at::globalContext().allowTF32CuDNN(), tf32.value_or(true));
    EXPECT_EQ(at::globalContext().float32MatmulPrecision() != at::Float32MatmulPrecision::HIGHEST,
              tf32.value_or(false));
  }
}

// A capture that fails (a host wait inside it) ends, and gives its memory back: eager work after it
// allocates from the usual pool as before (it used to go on into the failed graph's pool, never
// freed), and the graph captures again.
TEST(Gpu, AFailedCaptureLeavesTheAllocatorAsItWas) {
  REQUIRE_GPU();
  cuda::OwnStream own(0);
  const at::Tensor x = torch::ones({512, 512}, kGpu);
  cuda::SideStream side(own);
  // cuBLAS's workspace for this stream (32 MiB on an H200, from the caching allocator in LibTorch 2.x)
  // made before: the growth measured below is the failed graph's pool alone.
  (void)x.mm(x);
  synchronize(kGpu);
  cuda::Graph graph;
  EXPECT_THROW(graph.capture([&] { (void)x.mm(x).sum().item<float>(); }), std::runtime_error);
  synchronize(kGpu);
  const int64_t reserved = device_memory(kGpu)->reserved;
  for (int i = 0; i < 200; ++i) {
    const at::Tensor y = x.mm(x);
  }
  synchronize(kGpu);
  EXPECT_LE(device_memory(kGpu)->reserved - reserved, int64_t{4} << 20);
  at::Tensor out;
  graph.capture([&] { out = x.mm(x); });
  graph.replay();
  synchronize(kGpu);
  EXPECT_TRUE(torch::equal(out.cpu(), x.mm(x).cpu()));
}

// A trainer's graphs are captured on a stream of its own: never one LibTorch's pool hands out (to a
// prefetch copy, say), never another trainer's.
TEST(Gpu, EachTrainerCapturesOnAStreamOfItsOwn) {
  REQUIRE_GPU();
  cuda::OwnStream a(0), b(0);
  EXPECT_NE(a.id(), b.id());
  for (int i = 0; i < 64; ++i) {
    const int64_t pooled = cuda::pool_stream_id(0);
    EXPECT_NE(pooled, a.id());
    EXPECT_NE(pooled, b.id());
  }
}

// Fused trials on one GPU (baton search --fuse): three trainers on three threads, each on a stream
// of its own (OwnStreamScope), over one stream of batches gathered once on the GPU (SharedBatches,
// made on one trainer's stream, read on the others'): each ends with the weights it has alone,
// bitwise, and the streams were three, none the default one.
TEST(Gpu, TrainersOnStreamsOfTheirOwnOverSharedBatchesTrainAsEachAlone) {
  REQUIRE_GPU();
  Trainer alone(gpu_options().deterministic(true).max_duration("24ba"));
  alone.fit();
  const std::vector<at::Tensor> expected = weights(alone);

  auto data = quadrants(256, 1)->to(kGpu);
  auto shared = std::make_shared<SharedBatches>(4 * 32 * 16 * 16 * sizeof(float));  // 4 batches' inputs
  std::vector<std::unique_ptr<Trainer>> trainers;
  for (int i = 0; i < 3; ++i) {  // set up one at a time, on the default stream (LibTorch's one generator)
    TrainerOptions o = gpu_options().deterministic(true).max_duration("24ba");
    o.train_dataloader(
        std::make_shared<DataLoader>(data, DataLoaderOptions().batch_size(32).seed(3).shared_batches(shared)));
    trainers.push_back(std::make_unique<Trainer>(o));
  }
  std::mutex mutex;
  std::set<int64_t> streams;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      OwnStreamScope own(kGpu);
      {
        const std::lock_guard<std::mutex> lock(mutex);
        streams.insert(own.stream_id());
      }
      trainers[i]->fit();
    });
  }
  for (auto& t : threads) t.join();
  synchronize(kGpu);
  EXPECT_EQ(streams.size(), 3U);
  EXPECT_EQ(streams.count(0), 0U);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(equal(weights(*trainers[i]), expected)) << "trainer " << i;
  EXPECT_EQ(shared->stats().made, 24);
  EXPECT_EQ(shared->stats().taken, 72);
}

TEST(Gpu, FrozenLayersAreCapturedAgainAndBatchesOfANewShapeGetTheirOwnGraph) {
  REQUIRE_GPU();
  // 250 examples in batches of 32: the last batch of each epoch has 26 (a second shape).
  TrainerOptions o =
      graph_options(CudaGraphs::kOn, "sgd")
          .max_duration("6ep")
          .algorithms({make_algorithm("layer_freezing", {{"freeze_start", 0.5}, {"freeze_level", 0.5}})});
  o.train_dataloader(std::make_shared<DataLoader>(quadrants(250, 1), DataLoaderOptions().batch_size(32).seed(3)));
  Trainer trainer(o);
  const at::Tensor first = trainer.state().model->parameters()[0].detach().clone();
  trainer.fit();
  EXPECT_GT(trainer.summary().graph_steps, 20);
  EXPECT_TRUE(std::isfinite(trainer.summary().train_loss));
  EXPECT_FALSE(trainer.state().model->parameters()[0].requires_grad());                // frozen ...
  EXPECT_FALSE(torch::equal(first, trainer.state().model->parameters()[0].detach()));  // ... after training
}

// Activation checkpointing on the device: the CUDA generator's state restored for the recomputation
// (dropout's masks), the same gradients as without, and less of the allocator's peak.
TEST(Gpu, ActivationCheckpointingRecomputesWithTheDevicesGeneratorAndHoldsLess) {
  REQUIRE_GPU();
  const c10::Device gpu(c10::kCUDA, 0);
  const auto run = [&](bool recompute) {
    torch::manual_seed(0);
    auto model =
        make_model("gpt", ModelOptions().input_shape({512}).num_classes(64).layers(4).width(128).heads(2).dropout(0.1));
    if (recompute) checkpoint_activations(*model, {"auto"});
    model->to(gpu);
    model->train();
    torch::manual_seed(1);
    const Batch batch{torch::randint(0, 64, {8, 512}).to(gpu), torch::randint(0, 64, {8, 512}).to(gpu)};
    cuda::synchronize(0);
    reset_peak_memory(gpu);
    const int64_t before = device_memory(gpu)->allocated;
    torch::manual_seed(7);
    model->loss(model->forward(batch), batch).backward();
    cuda::synchronize(0);
    std::vector<at::Tensor> grads;
    for (const auto& p : model->parameters()) grads.push_back(p.grad().cpu());
    return std::pair{grads, device_memory(gpu)->peak - before};
  };
  const auto [plain, plain_peak] = run(false);
  const auto [recomputed, recomputed_peak] = run(true);
  ASSERT_EQ(plain.size(), recomputed.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    EXPECT_LT((plain[i] - recomputed[i]).abs().max().item<double>(), 1e-5) << "gradient " << i;
  }
  EXPECT_LT(recomputed_peak, plain_peak * 6 / 10) << recomputed_peak << " of " << plain_peak << " bytes";
}

// A Llama fine-tuned with LoRA on token windows: on the device as on the CPU (fp32, the same
// losses after 20 steps, to 5e-3), under bf16 too, and under CUDA graphs.
TEST(Gpu, LoraTrainsOnTheDeviceAsOnTheCpu) {
  REQUIRE_GPU();
  torch::manual_seed(5);
  const at::Tensor ids = torch::randint(0, 257, {256, 33}, torch::kLong);
  auto data = std::make_shared<TensorDataset>(ids.narrow(1, 0, 32).contiguous(), ids.narrow(1, 1, 32).contiguous());
  const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                                 {"vocab_size", 257},
                                 {"hidden_size", 64},
                                 {"intermediate_size", 128},
                                 {"num_hidden_layers", 2},
                                 {"num_attention_heads", 4},
                                 {"num_key_value_heads", 2},
                                 {"max_position_embeddings", 64}};
  auto run = [&](const std::string& device, Precision precision, CudaGraphs graphs) {
    torch::manual_seed(0);
    auto model = make_hf_model(parse_hf_config(config.dump(), "config.json"));
    TrainerOptions o;
    o.device(device)
        .model(model)
        .train_dataloader(std::make_shared<DataLoader>(data, DataLoaderOptions().batch_size(8).seed(1)))
        .optimizers({make_optimizer(OptimizerOptions().name("adamw").lr(1e-2), model->parameters())})
        .algorithms(
            {make_algorithm("lora", {{"r", 8}, {"dropout", 0.0}, {"targets", {"q_proj", "v_proj", "up_proj"}}})})
        .max_duration("20ba")
        .eval_interval("0ep")
        .progress_bar(false)
        .console_log_interval("0ba")
        .precision(precision)
        .cuda_graphs(graphs);
    Trainer trainer(o);
    trainer.fit();
    return std::pair{trainer.summary().train_loss, trainer.summary().graph_steps};
  };
  const auto cpu = run("cpu", Precision::kFp32, CudaGraphs::kOff);
  const auto gpu = run("cuda", Precision::kFp32, CudaGraphs::kOff);
  EXPECT_NEAR(gpu.first, cpu.first, 5e-3);
  const auto bf16 = run("cuda", Precision::kAmpBf16, CudaGraphs::kOff);
  EXPECT_NEAR(bf16.first, cpu.first, 0.1);
  const auto graphed = run("cuda", Precision::kFp32, CudaGraphs::kOn);
  EXPECT_GT(graphed.second, 10);
  EXPECT_NEAR(graphed.first, cpu.first, 5e-3);
}

}  // namespace
}  // namespace baton
