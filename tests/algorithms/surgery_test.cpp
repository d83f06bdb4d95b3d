// Model surgery (src/algorithms/surgery.cpp): modules replaced, outputs kept, reloaded from checkpoints.
#include "baton/algorithms/algorithms.h"
#include "baton/io/file.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include <ATen/autocast_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "algorithms/algorithms_fixtures.h"
#include "baton/algorithms/registry.h"
#include "baton/core/grad_scaler.h"
#include "baton/core/logger.h"
#include "baton/core/state.h"
#include "baton/models/surgery.h"
#include "baton/models/zoo.h"
#include "baton/nas/space.h"
#include "baton/optim/optimizers.h"
#include "baton/train/one_shot.h"
#include "baton/train/trainer.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton {
namespace {

using namespace algorithms_fixtures;  // NOLINT(google-build-using-namespace)

using ::testing::HasSubstr;
using testing::Probe;
using testing::quadrants;

// ---- Surgery and layout ----

TEST(ChannelsLast, ConvWeightsAndInputsAreChannelsLastAndTheModelTrains) {
  TrainerOptions o = image_options().max_duration("2ba").algorithms({std::make_shared<ChannelsLast>()});
  bool input_nhwc = false;
  o.callbacks({std::make_shared<Probe>([&](Event e, State& s) {
    // Real NHWC strides (channel stride 1) even for one channel, so convolutions after it stay NHWC.
    if (e == Event::kBeforeForward) {
      input_nhwc = s.batch.input.is_contiguous(at::MemoryFormat::ChannelsLast) && s.batch.input.stride(1) == 1;
    }
  })});
  Trainer trainer(o);
  trainer.fit();
  EXPECT_TRUE(input_nhwc);
  const at::Tensor c1 = o.model()->named_parameters()["module.c1.weight"];
  EXPECT_TRUE(c1.is_contiguous(at::MemoryFormat::ChannelsLast) && c1.stride(1) == 1);
  // And so the first convolution's output is NHWC too.
  const at::Tensor out = torch::conv2d(torch::randn({2, 1, 16, 16})
                                           .contiguous(at::MemoryFormat::ChannelsLast)
                                           .as_strided({2, 1, 16, 16}, {256, 1, 16, 1}),
                                       c1.detach(), {}, 1, 1);
  EXPECT_TRUE(out.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(std::isfinite(trainer.summary().train_loss));
}

// memory_format: auto turns channels-last on for the zoo's models with 4-d weights on the CPU:
// each must give the outputs and gradients it gives in NCHW (no view that assumes NCHW strides).
TEST(ChannelsLast, EveryZooModelWithConvolutionsGivesTheSameOutputsAndGradients) {
  int convolutional = 0;
  for (const auto& name : model_names()) {
    if (name == "gpt" || name == "gpt_space") continue;  // token indices, no images
    Bench nchw(name), nhwc(name);                        // the same seed: the same weights
    const auto params = nchw.model->parameters();
    if (std::none_of(params.begin(), params.end(), [](const at::Tensor& p) { return p.dim() == 4; })) continue;
    ++convolutional;
    // In float64: resnet50's gradients at initialisation are so ill-conditioned that float32's own
    // rounding moves them by a few percent (PyTorch's too); in float64 the layouts must agree tightly.
    for (Bench* b : {&nchw, &nhwc}) {
      b->model->to(torch::kDouble);
      b->state.batch.input = b->state.batch.input.to(torch::kDouble);
    }
    ChannelsLast layout;
    layout.apply(Event::kInit, nhwc.state, nhwc.logger);
    layout.apply(Event::kAfterDataloader, nhwc.state, nhwc.logger);
    ASSERT_EQ(nhwc.state.batch.input.stride(1), 1) << name;
    std::vector<at::Tensor> grads[2];
    at::Tensor outputs[2];
    int i = 0;
    for (Bench* b : {&nchw, &nhwc}) {
      outputs[i] = b->model->forward(b->state.batch);
      torch::nn::functional::cross_entropy(outputs[i], b->state.batch.target).backward();
      for (const auto& p : b->model->parameters()) grads[i].push_back(p.grad().contiguous());
      ++i;
    }
    // Rounding differs between the layouts' kernels: a tolerance relative to each tensor's scale; a
    // wrong stride gives errors of its scale.
    const auto close = [&](const at::Tensor& a, const at::Tensor& b) {
      const double scale = std::max(a.abs().max().item<double>(), 1e-12);
      return (a - b).abs().max().item<double>() <= 1e-9 * scale;
    };
    EXPECT_TRUE(close(outputs[0], outputs[1])) << name;
    ASSERT_EQ(grads[0].size(), grads[1].size());
    for (std::size_t k = 0; k < grads[0].size(); ++k) {
      EXPECT_TRUE(close(grads[0][k], grads[1][k]))
          << name << " parameter " << k << ": largest difference "
          << (grads[0][k] - grads[1][k]).abs().max().item<double>() << " of " << grads[0][k].abs().max().item<double>();
    }
  }
  EXPECT_EQ(convolutional, 5);  // fashion_cnn, resnet20, resnet18, resnet50, cnn_space
}

// Surgery: the modules are replaced, outputs keep their shape, the model trains and saves, and a
// run without the algorithm re-applies it when it loads the checkpoint.
void check_surgery(const std::string& model_name, const std::string& algorithm, const nlohmann::json& options,
                   const std::string& replaced_type, int want_replaced) {
  SCOPED_TRACE(algorithm);
  const baton::testing::TempDir dir_tmp("surgery");
  const std::filesystem::path dir = dir_tmp.path();
  baton::remove_tree(dir);
  TrainerOptions o = image_options(model_name).max_duration("3ba").algorithms({make_algorithm(algorithm, options)});
  const auto before = o.model()->parameters().size();
  Trainer trainer(o.save_folder(dir.string()).save_interval("3ba"));
  int replaced = 0;
  for (const auto& m : o.model()->modules()) replaced += m->name() == replaced_type ? 1 : 0;
  EXPECT_EQ(replaced, want_replaced);
  EXPECT_GE(o.model()->parameters().size(), before);
  trainer.fit();
  EXPECT_TRUE(std::isfinite(trainer.summary().train_loss));
  const at::Tensor x = torch::randn({3, 1, 16, 16});
  o.model()->eval();
  const at::Tensor out = o.model()->forward(Batch{x, at::Tensor()});
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{3, 4}));

  TrainerOptions fresh = image_options(model_name).load_path((dir / "ep0-ba3.ckpt").string());
  Trainer loaded(fresh);
  ASSERT_EQ(loaded.state().algorithms.size(), 1U);  // rebuilt from the checkpoint
  fresh.model()->eval();
  EXPECT_TRUE(fresh.model()->forward(Batch{x, at::Tensor()}).allclose(out, 1e-5, 1e-6));
  baton::remove_tree(dir);
}

TEST(Surgery, BlurPoolReplacesStridedConvsAndMaxPools) {
  check_surgery("resnet20", "blurpool", {}, "BlurConv2d", 4);  // 2 strided 3x3 convs, 2 strided shortcuts
  check_surgery("fashion_cnn", "blurpool", {}, "BlurMaxPool2d", 2);
}

TEST(Surgery, SqueezeExciteFollowsWideConvs) {
  check_surgery("resnet20", "squeeze_excite", {{"min_channels", 64}, {"latent_channels", 0.25}}, "SqueezeExciteConv2d",
                7);  // stage 3: 6 convs + the shortcut
}

TEST(Surgery, StochasticDepthWrapsEveryBlock) {
  check_surgery("resnet20", "stochastic_depth", {{"drop_rate", 0.5}}, "StochasticBlock", 9);
  check_surgery("resnet50", "stochastic_depth", {{"drop_rate", 0.5}}, "StochasticBlock", 16);  // bottlenecks
}

TEST(Surgery, GhostBatchNormNormalisesEachGhostBatch) {
  check_surgery("resnet20", "ghost_batchnorm", {{"ghost_batch_size", 8}}, "GhostBatchNorm2d", 21);
  // In training each group of 8 has per-channel mean ~0 after the norm (plain BatchNorm: only the batch).
  Bench b("resnet20");
  GhostBatchNorm(GhostBatchNormOptions().ghost_batch_size(4)).apply(Event::kInit, b.state, b.logger);
  torch::nn::AnyModule* ghost = nullptr;
  for (const auto& m : b.model->modules()) {
    if (auto* r = dynamic_cast<Replaceable*>(m.get())) {
      for (const auto& name : r->slot_names()) {
        if (r->slot(name).ptr()->name() == "GhostBatchNorm2d" &&
            r->slot(name).ptr()->named_buffers()["batchnorm.running_mean"].size(0) == 16) {
          ghost = &r->slot(name);
        }
      }
    }
  }
  ASSERT_NE(ghost, nullptr);
  ghost->ptr()->train();
  const at::Tensor x = torch::randn({8, 16, 4, 4}) + torch::arange(8, torch::kFloat).view({8, 1, 1, 1});
  const at::Tensor y = ghost->forward(x);
  for (int64_t g = 0; g < 2; ++g) {
    EXPECT_LT(y.narrow(0, g * 4, 4).mean({0, 2, 3}).abs().max().item<double>(), 1e-4);
  }
}

TEST(Surgery, LowPrecisionNormsComputeInBf16UnderAutocast) {
  struct NormsImpl : Replaceable {
    NormsImpl() {
      ln_ = add_slot("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({16})));
      gn_ = add_slot("gn", torch::nn::GroupNorm(torch::nn::GroupNormOptions(2, 4)));
    }
    at::Tensor forward(const at::Tensor& x) { return call(ln_, call(gn_, x)); }
    int ln_, gn_;
  };
  auto net = std::make_shared<NormsImpl>();
  auto model = std::make_shared<Classifier>(net);
  State state;
  state.model = model;
  Logger logger(state);
  const at::Tensor x = torch::randn({2, 4, 16});
  auto run = [&] {
    AutocastGuard autocast(Precision::kAmpBf16, c10::DeviceType::CPU);
    return model->forward(Batch{x, at::Tensor()});
  };
  const at::Tensor plain = run();
  EXPECT_EQ(plain.scalar_type(), at::kFloat);
  LowPrecisionGroupNorm gn;
  LowPrecisionLayerNorm ln;
  gn.apply(Event::kInit, state, logger);
  ln.apply(Event::kInit, state, logger);
  EXPECT_EQ(gn.replaced(), 1);
  EXPECT_EQ(ln.replaced(), 1);
  const at::Tensor low = run();
  EXPECT_EQ(low.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(low.to(at::kFloat).allclose(plain, 0.05, 0.05));
  EXPECT_EQ(model->forward(Batch{x, at::Tensor()}).scalar_type(), at::kFloat);  // no autocast: as before
}

}  // namespace
}  // namespace baton
