#include "baton/models/export.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "baton/data/readers.h"
#include "baton/models/zoo.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::TempDir;

void write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// One training step, so that the weights and BatchNorm's running statistics are not the initial ones.
void train_a_step(Model& model, const std::vector<int64_t>& input_shape) {
  std::vector<int64_t> shape = {8};
  shape.insert(shape.end(), input_shape.begin(), input_shape.end());
  torch::optim::SGD sgd(model.parameters(), 0.1);
  model.train();
  Batch batch{torch::randn(shape), torch::randint(0, 10, {8})};
  model.loss(model.forward(batch), batch).backward();
  sgd.step();
}

class ExportEachModel : public ::testing::TestWithParam<std::string> {};

TEST_P(ExportEachModel, TorchJitLoadGivesTheModelsOutputsOnOtherBatchSizes) {
  torch::manual_seed(1);
  const std::vector<int64_t> input = GetParam() == "mlp" ? std::vector<int64_t>{12} : std::vector<int64_t>{1, 16, 16};
  auto model = make_model(GetParam(), ModelOptions().input_shape(input).num_classes(10));
  train_a_step(*model, input);
  model->train();  // export must evaluate in eval mode and leave the mode as it found it

  std::vector<int64_t> example = {2};
  example.insert(example.end(), input.begin(), input.end());
  const std::string bytes = export_torchscript(*model, torch::randn(example));
  EXPECT_TRUE(model->is_training());

  std::istringstream in(bytes);
  torch::jit::Module loaded = torch::jit::load(in);
  std::vector<int64_t> other = {5};
  other.insert(other.end(), input.begin(), input.end());
  const at::Tensor x = torch::randn(other);
  model->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor want = model->eval_forward(Batch{x, at::Tensor()});
  const at::Tensor got = loaded.forward({x}).toTensor();
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6)) << (got - want).abs().max();

  // The weights are attributes under the model's own names, held once.
  int64_t params = 0;
  for (const auto& p : loaded.named_parameters()) {
    params += p.value.numel();
    EXPECT_TRUE(p.name.starts_with("module.")) << p.name;
  }
  int64_t want_params = 0;
  for (const auto& p : model->parameters()) want_params += p.numel();
  EXPECT_EQ(params, want_params);
  EXPECT_LT(bytes.size(), static_cast<std::size_t>(want_params) * 4 + 200000);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ExportEachModel, ::testing::Values("fashion_cnn", "mlp", "resnet20", "resnet18"));

TEST(Export, AGptTakesTokenIdsAndAnyBatchSize) {  // once: indices given as float; a batch size baked in
  torch::manual_seed(3);
  auto model = make_model("gpt", ModelOptions().input_shape({16}).num_classes(50).layers(1).width(32).heads(2));
  const std::string bytes = export_torchscript(*model, torch::randint(50, {2, 16}, torch::kLong));
  std::istringstream in(bytes);
  torch::jit::Module loaded = torch::jit::load(in);
  const at::Tensor tokens = torch::randint(50, {5, 16}, torch::kLong);
  model->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor want = model->eval_forward(Batch{tokens, at::Tensor()});
  const at::Tensor got = loaded.forward({tokens}).toTensor();
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6)) << (got - want).abs().max();
}

TEST(Export, PythonTorchJitLoadGivesTheSameOutputs) {
  if (std::system("/usr/bin/python3 -c 'import torch, numpy' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "Debian's python3-torch is not installed";
  }
  torch::manual_seed(2);
  auto model = make_model("fashion_cnn", ModelOptions().input_shape({1, 28, 28}).num_classes(10));
  train_a_step(*model, {1, 28, 28});
  const TempDir dir("export");
  write(dir.path() / "model.pt", export_torchscript(*model, torch::randn({2, 1, 28, 28})));
  const at::Tensor x = torch::randn({7, 1, 28, 28});
  model->eval();
  torch::NoGradGuard no_grad;
  write_npy((dir.path() / "x.npy").string(), x);
  write_npy((dir.path() / "want.npy").string(), model->eval_forward(Batch{x, at::Tensor()}));
  const std::string script =
      "import numpy, torch, sys\n"
      "d = sys.argv[1]\n"
      "m = torch.jit.load(d + '/model.pt')\n"
      "m.eval()\n"
      "got = m(torch.from_numpy(numpy.load(d + '/x.npy'))).detach().numpy()\n"
      "want = numpy.load(d + '/want.npy')\n"
      "assert got.shape == want.shape, (got.shape, want.shape)\n"
      "err = abs(got - want).max()\n"
      "print('max difference', err)\n"
      "sys.exit(0 if err < 1e-5 else 1)\n";
  write(dir.path() / "check.py", script);
  const std::string command =
      "/usr/bin/python3 " + (dir.path() / "check.py").string() + " " + dir.path().string() + " >&2";
  EXPECT_EQ(std::system(command.c_str()), 0);
}

// A forward whose path depends on the data: tracing records one path only, and export says so.
struct DataDependentImpl : torch::nn::Module {
  DataDependentImpl() : fc(register_module("fc", torch::nn::Linear(4, 3))) {}
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor out = fc(x);
    for (int64_t i = 0; i < x.size(0); ++i) {
      if (x[i][0].item<float>() > 0) out[i] = -out[i];  // per-example branch
    }
    return out;
  }
  torch::nn::Linear fc;
};
TORCH_MODULE(DataDependent);

TEST(Export, RefusesAModelWhoseTraceDoesNotReproduceIt) {
  Classifier model(DataDependent().ptr());
  const at::Tensor x = torch::tensor({{1.0F, 0.F, 0.F, 0.F}, {-1.0F, 0.F, 0.F, 0.F}});
  const std::string error = testing::error_of([&] { export_torchscript(model, x); });
  EXPECT_THAT(error, ::testing::AnyOf(::testing::HasSubstr("cannot trace the model"),
                                      ::testing::HasSubstr("control flow that depends on the data")));
}

}  // namespace
}  // namespace baton
