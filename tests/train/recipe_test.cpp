// Recipes (src/train/recipe.cpp): keys checked and named in errors, device and distributed keys,
// the example search's learning rate.
#include "baton/train/recipe.h"

#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/data/images.h"
#include "baton/data/readers.h"
#include "baton/data/tokens.h"
#include "baton/models/safetensors.h"
#include "baton/models/zoo.h"
#include "baton/train/trainer.h"
#include "common/test_util.h"

namespace baton {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using testing::error_of;

TEST(Recipe, AnErrorInASectionTheRecipeLacksNamesTheKey) {
  // No model: section, and the default model does not fit this data: the key, not yaml-cpp's text.
  const baton::testing::TempDir dir_tmp("recipe_nomodel");
  const std::filesystem::path dir = dir_tmp.path();
  std::filesystem::create_directories(dir);
  write_npy((dir / "x.npy").string(), torch::randn({8, 4}));
  write_npy((dir / "y.npy").string(), torch::arange(8) % 2);
  const std::string yaml = "data: {dataset: files, train_inputs: " + (dir / "x.npy").string() +
                           ", train_labels: " + (dir / "y.npy").string() + "}\n";
  EXPECT_THAT(error_of([&] { build_run(Recipe::parse(yaml, "r.yaml")); }), StartsWith("r.yaml: model.name: "));
  baton::remove_tree(dir);
}

TEST(Recipe, LabelsAndEmptyFilesAreErrorsThatNameTheKey) {
  const baton::testing::TempDir dir_tmp("recipe_labels");
  const std::filesystem::path dir = dir_tmp.path();
  std::filesystem::create_directories(dir);
  const auto npy = [&](const std::string& name, const at::Tensor& t) {
    write_npy((dir / name).string(), t);
    return (dir / name).string();
  };
  const std::string x = npy("x.npy", torch::randn({8, 4}));
  const auto build = [&](const std::string& inputs, const std::string& labels) {
    return error_of([&] {
      build_run(Recipe::parse(
          "model: {name: mlp}\ndata: {dataset: files, train_inputs: " + inputs + ", train_labels: " + labels + "}\n",
          "r.yaml"));
    });
  };
  // [N, 1] is one label per example: it trains.
  EXPECT_EQ(build(x, npy("column.npy", (torch::arange(8) % 2).view({8, 1}))), "no error");
  EXPECT_THAT(build(x, npy("wide.npy", torch::zeros({8, 3}, torch::kLong))),
              HasSubstr("data.train_labels: labels of shape [8, 3]: expected one class index per example"));
  EXPECT_THAT(build(x, npy("huge.npy", torch::full({8}, int64_t{3000000000}))),
              HasSubstr("data.train_labels: label 3000000000: class indices run from 0"));
  EXPECT_THAT(build(x, npy("negative.npy", torch::full({8}, int64_t{-1}))), HasSubstr("label -1: class indices"));
  EXPECT_THAT(build(npy("none.npy", torch::randn({0, 4})), npy("none_y.npy", torch::zeros({0}, torch::kLong))),
              HasSubstr("data.train_inputs: holds 0 examples"));
  EXPECT_THAT(error_of([] { build_run(Recipe::parse("optimizer: {lr: .nan}\n", "r.yaml")); }),
              StartsWith("r.yaml:1:17: optimizer.lr: expected a finite number, got '.nan'"));
  baton::remove_tree(dir);
}

TEST(Recipe, BadValuesNameTheKeyAndTheValue) {
  const auto build = [](const std::string& yaml, std::vector<std::string> sets = {}) {
    return error_of([&] { build_run(Recipe::parse(yaml, "r.yaml", sets)); });
  };
  EXPECT_THAT(build("max_duration: 3 epochs\n"), StartsWith("r.yaml:1:15: max_duration: invalid time '3 epochs'"));
  EXPECT_THAT(build("seed: abc\n"), StartsWith("r.yaml:1:7: seed: expected a whole number, got 'abc'"));
  EXPECT_THAT(build("", {"precision=fp16"}), StartsWith("--set precision: unknown precision 'fp16'"));
  EXPECT_THAT(build("", {"distributed=maybe"}), StartsWith("--set distributed: expected auto, on or off, got 'maybe'"));
  EXPECT_THAT(build("ddp_bucket_mb: 0\n"), HasSubstr("ddp_bucket_mb: must be positive"));
  // Refused before any data is read (the data here would be Fashion-MNIST's).
  EXPECT_THAT(build("max_duration: 2iter\n"), StartsWith("r.yaml:1:15: max_duration: '2iter' must count epochs"));
  EXPECT_THAT(build("max_duration: 5s\neval_interval: 0.1dur\n"),
              StartsWith("r.yaml:2:16: eval_interval: '0.1dur' is a fraction of the run (dur), but max_duration is"));
  EXPECT_THAT(build("max_duration: 0.5dur\n"), StartsWith("r.yaml:1:15: max_duration:"));
  EXPECT_THAT(build("max_duration: 0ba\n"), StartsWith("r.yaml:1:15: max_duration: must be more than 0"));
  EXPECT_THAT(build("eval_interval: 90s\n"),
              StartsWith("r.yaml:1:16: eval_interval: '90s' must be in ep, ba, sp or dur"));
  EXPECT_THAT(build("eval_metrics: [foo]\n"), StartsWith("r.yaml:1:15: eval_metrics: unknown metric 'foo'"));
}

TEST(Recipe, DeviceKeys) {
  const auto build = [](const std::string& yaml, std::vector<std::string> sets = {}) {
    return error_of([&] { build_run(Recipe::parse(yaml, "r.yaml", sets)); });
  };
  EXPECT_THAT(build("device: tpu\n"), StartsWith("r.yaml:1:9: device: 'tpu': unknown device"));
  EXPECT_THAT(build("", {"device=cuda:7"}), StartsWith("--set device: 'cuda:7': "));
  EXPECT_THAT(build("device: cpu\nprecision: amp_fp16\n"),
              StartsWith("r.yaml:2:12: precision: amp_fp16 needs a CUDA device"));
  EXPECT_THAT(build("log_interval: 0\n"), HasSubstr("log_interval: expected a whole number of batches"));
  EXPECT_THAT(build("ddp_backend: gloo\n"), HasSubstr("ddp_backend: expected auto, nccl or mpi, got 'gloo'"));
  EXPECT_THAT(build("tf32: maybe\n"), HasSubstr("tf32: expected"));
  EXPECT_THAT(build("cuda_graphs: sometimes\n"),
              StartsWith("r.yaml:1:14: cuda_graphs: expected auto, on or off, got 'sometimes'"));
  EXPECT_THAT(build("device: cpu\ncuda_graphs: on\n"),
              StartsWith("r.yaml:2:14: cuda_graphs: on needs a CUDA device (device is cpu); use auto or off"));
  // Fashion-MNIST is not needed to read these: a tiny data set of files.
  const baton::testing::TempDir dir_tmp("device_recipe");
  const std::filesystem::path dir = dir_tmp.path();
  std::filesystem::create_directories(dir);
  const auto npy = [&](const std::string& name, const at::Tensor& t) {
    const std::string path = (dir / name).string();
    write_npy(path, t);
    return path;
  };
  const std::string data = "data: {dataset: files, train_inputs: " + npy("x.npy", torch::randn({8, 4})) +
                           ", train_labels: " + npy("y.npy", torch::arange(8) % 2) + ", on_device: true}\n" +
                           "model: {name: mlp, hidden: [4]}\n";
  const auto run = build_run(Recipe::parse(
      "device: cpu\ntf32: true\nlog_interval: 10\nddp_backend: mpi\ncuda_graphs: off\n" + data, "r.yaml"));
  EXPECT_EQ(run.options.device(), "cpu");
  EXPECT_EQ(run.options.tf32(), std::optional<bool>(true));
  EXPECT_EQ(run.options.log_interval(), 10);
  EXPECT_EQ(run.options.ddp_backend(), DdpBackend::kMpi);
  EXPECT_EQ(run.options.cuda_graphs(), CudaGraphs::kOff);
  EXPECT_TRUE(run.train_data->device().is_cpu());  // on_device on the CPU: where it was
  const auto automatic = build_run(Recipe::parse(data, "r.yaml"));
  EXPECT_EQ(automatic.options.device(), "auto");
  EXPECT_FALSE(automatic.options.log_interval().has_value());
  EXPECT_EQ(automatic.options.cuda_graphs(), CudaGraphs::kAuto);
  EXPECT_EQ(automatic.options.tf32(), std::nullopt);  // PyTorch's defaults: cuDNN in TF32, matmuls in fp32
  // activation_checkpointing: false, auto, or module kinds.
  const auto kinds = [&](const std::string& value) {
    return build_run(Recipe::parse("activation_checkpointing: " + value + "\n" + data, "r.yaml"))
        .options.activation_checkpointing();
  };
  EXPECT_EQ(automatic.options.activation_checkpointing(), std::vector<std::string>{});
  EXPECT_EQ(kinds("false"), std::vector<std::string>{});
  EXPECT_EQ(kinds("auto"), (std::vector<std::string>{"auto"}));
  EXPECT_EQ(kinds("[Block, BasicBlock]"), (std::vector<std::string>{"Block", "BasicBlock"}));
  EXPECT_THAT(build("activation_checkpointing: 3\n"),
              StartsWith("r.yaml:1:27: activation_checkpointing: expected false, auto, or a list of module kinds "
                         "([Block]), got 3"));
  EXPECT_THAT(build("activation_checkpointing: true\n"), HasSubstr("activation_checkpointing: expected false, auto"));
  // sharding: none, optimizer, gradients, full.
  EXPECT_EQ(automatic.options.sharding(), Sharding::kNone);
  EXPECT_EQ(build_run(Recipe::parse("sharding: gradients\n" + data, "r.yaml")).options.sharding(),
            Sharding::kGradients);
  EXPECT_TRUE(build_run(Recipe::parse("offload: {optimizer: cpu}\n" + data, "r.yaml")).options.offload_optimizer());
  EXPECT_THAT(build("offload: {optimizer: nvme}\n"),
              HasSubstr("offload: expected {optimizer: cpu} or {optimizer: none}, got {\"optimizer\":\"nvme\"}"));
  EXPECT_THAT(build("sharding: zero3\n"),
              StartsWith("r.yaml:1:11: sharding: expected none, optimizer, gradients or full, got 'zero3'"));
  EXPECT_EQ(build_run(Recipe::parse("tf32: false\n" + data, "r.yaml")).options.tf32(), std::optional<bool>(false));
  EXPECT_THAT(testing::error_of([&] { build_run(Recipe::parse("tf32: sometimes\n" + data, "r.yaml")); }),
              HasSubstr("r.yaml:1:7: tf32: expected auto (PyTorch's defaults"));
  baton::remove_tree(dir);
}

TEST(Recipe, TheExampleSearchTunesTheLearningRateTheRecipeUses) {
  std::ifstream in(BATON_SOURCE_DIR "/recipes/search_fashion_mnist.yaml");
  const std::string space((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(space, HasSubstr("\nscheduler.max_lr: {_type: loguniform"));
  // The recipe's schedule at its peak (30% of the run), built with one key set.
  const baton::testing::TempDir dir_tmp("search_lr");
  const std::filesystem::path dir = dir_tmp.path();
  std::filesystem::create_directories(dir);
  write_npy((dir / "x.npy").string(), torch::rand({64, 28, 28}));
  write_npy((dir / "y.npy").string(), torch::arange(64) % 10);
  auto peak_lr = [&](const std::string& set) {
    const TrainingRun run =
        build_run(Recipe::load(BATON_SOURCE_DIR "/recipes/fashion_mnist.yaml",
                               {"data.dataset=files", "data.train_inputs=" + (dir / "x.npy").string(),
                                "data.train_labels=" + (dir / "y.npy").string(), "max_duration=10ba", set}));
    const ScheduleClock clock{.batches_per_epoch = 1, .batch_size = 128, .max_batches = 10};
    const double base = run.options.optimizers()[0]->param_groups()[0].options().get_lr();
    return run.options.schedulers().at(0)->lr(base, 3, clock);
  };
  EXPECT_NE(peak_lr("scheduler.max_lr=0.01"), peak_lr("scheduler.max_lr=0.3"));
  EXPECT_EQ(peak_lr("optimizer.lr=0.01"), peak_lr("optimizer.lr=0.3"));  // why it is not the key searched
  baton::remove_tree(dir);
}

TEST(Recipe, DistributedKeys) {
  EXPECT_EQ(build_run(Recipe::parse("", "r.yaml")).options.distributed(), Distributed::kAuto);
  const auto run = build_run(Recipe::parse("distributed: off\nddp_bucket_mb: 0.5\nddp_overlap: false\n", "r.yaml"));
  EXPECT_EQ(run.options.distributed(), Distributed::kOff);
  EXPECT_DOUBLE_EQ(run.options.ddp_bucket_mb(), 0.5);
  EXPECT_FALSE(run.options.ddp_overlap());
  EXPECT_EQ(build_run(Recipe::parse("", "r.yaml", {"distributed=on"})).options.distributed(), Distributed::kOn);
}

// The recipe fuzzer's corpus (tests/fuzz/corpus/recipe_parser) as regression inputs.
TEST(FuzzCorpus, RecipeParserRefusesOrReadsEveryInput) {
  const int inputs =
      testing::for_each_corpus_input("recipe_parser", [](const std::string& name, const std::string& text) {
        try {
          const Recipe recipe = Recipe::parse(text, name);
          EXPECT_NO_THROW(Recipe::parse(recipe.resolved_yaml(), "resolved.yaml")) << name;
        } catch (const RecipeError&) {
        }
      });
  EXPECT_GE(inputs, 5);
}

}  // namespace
}  // namespace baton
