// TorchScript models (src/models/torchscript.cpp): a scripted module trains in C++; an operator
// LibTorch lacks and code nested too deep are refused in one line.
#include "baton/io/file.h"
#include "baton/train/trainer.h"

#include <stdexcept>

#include <caffe2/serialize/inline_container.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <filesystem>

#include "baton/algorithms/registry.h"
#include "baton/loggers/in_memory_logger.h"
#include "baton/models/zoo.h"
#include "baton/optim/optimizers.h"
#include "baton/train/checkpoint.h"
#include "baton/train/checkpoint_saver.h"
#include "common/fixtures.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::blobs;
using ::testing::HasSubstr;
using testing::small_options;

TEST(TorchScript, AScriptedModuleTrainsInCpp) {
  const testing::TempDir dir_tmp("ts");
  const std::string dir = dir_tmp.str();
  const std::string path = dir + "/net.pt";
  {
    torch::jit::Module m("Net");
    m.register_parameter("w", torch::randn({8, 4}) * 0.1, false);
    m.register_parameter("b", torch::zeros({4}), false);
    m.define(R"(
def forward(self, x):
    return torch.matmul(x, self.w) + self.b
)");
    m.save(path);
  }
  auto model = load_torchscript_classifier(path);
  ASSERT_EQ(model->parameters().size(), 2u);
  const auto before = model->parameters()[0].clone();
  Trainer trainer(small_options(256, 16)
                      .model(model)
                      .optimizers({make_optimizer(OptimizerOptions().name("sgd").lr(0.1), model->parameters())})
                      .max_duration("3ep")
                      .eval_interval("3ep"));
  trainer.fit();
  EXPECT_GT(trainer.state().eval_metrics["eval"]["accuracy"], 0.9);
  EXPECT_FALSE(torch::equal(before, model->parameters()[0]));
  // The scripted module itself was trained: reload is not needed to see the new weights.
  EXPECT_THAT([&] { load_torchscript_classifier(dir + "/missing.pt"); },
              ::testing::ThrowsMessage<std::runtime_error>(
                  HasSubstr("missing.pt: cannot open the TorchScript module (No such file or directory)")));
  baton::remove_tree(dir);
}

// A TorchScript file saved by LibTorch, its code records rewritten by `edit` (as a newer PyTorch,
// or a hostile hand, would have written them).
std::string edited_torchscript(const std::string& dir, const std::function<std::string(std::string)>& edit) {
  const std::string saved = dir + "/saved.pt", out = dir + "/edited.pt";
  {
    torch::jit::Module m("Net");
    m.register_parameter("w", torch::randn({8, 4}), false);
    m.define("def forward(self, x):\n    return torch.relu(torch.matmul(x, self.w))\n");
    m.save(saved);
  }
  caffe2::serialize::PyTorchStreamReader reader(saved);
  caffe2::serialize::PyTorchStreamWriter writer(out);
  for (const std::string& name : reader.getAllRecords()) {
    auto [data, size] = reader.getRecord(name);
    std::string bytes(static_cast<const char*>(data.get()), size);
    if (name.find("code/") != std::string::npos && name.ends_with(".py")) bytes = edit(bytes);
    if (name != "version" && name != ".data/version") writer.writeRecord(name, bytes.data(), bytes.size());
  }
  writer.writeEndOfFile();
  return out;
}

TEST(TorchScript, AnOperatorThisLibTorchLacksIsNamedInOneLineWithTheBuildThatHasIt) {
  const testing::TempDir dir("ts_newer");
  const std::string unknown = edited_torchscript(dir.str(), [](std::string code) {
    const size_t at = code.find("torch.relu(");
    return at == std::string::npos ? code : code.replace(at, 10, "torch.frobnicate");
  });
  const std::string none = testing::error_of([&] { load_torchscript_classifier(unknown); });
  EXPECT_THAT(none, HasSubstr("the module uses operator aten::frobnicate, which this LibTorch ("));
  EXPECT_THAT(none, HasSubstr("a newer LibTorch has"));
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  GTEST_SKIP() << "this LibTorch (" << TORCH_VERSION << ") has aten::rms_norm";
#endif
  const std::string path = edited_torchscript(dir.str(), [](std::string code) {
    const size_t at = code.find("torch.relu(");
    return at == std::string::npos ? code : code.replace(at, 10, "torch.rms_norm");
  });
  const std::string error = testing::error_of([&] { load_torchscript_classifier(path); });
  EXPECT_THAT(error, HasSubstr("edited.pt: the module uses operator aten::rms_norm, which this LibTorch ("));
  EXPECT_THAT(error, HasSubstr("LibTorch 2.4 has"));
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(TorchScript, CodeNestedTooDeepForLibTorchsParserIsRefusedNotACrash) {
  const testing::TempDir dir("ts_deep");
  const std::string path = edited_torchscript(dir.str(), [](std::string code) {
    const size_t line = code.rfind('\n', code.find("return"));  // a line before the return, indented as it
    const std::string indent = code.substr(line + 1, code.find("return") - line - 1);
    return code.insert(line + 1, indent + "deep = " + std::string(50000, '(') + "1" + std::string(50000, ')') + "\n");
  });
  EXPECT_THAT(testing::error_of([&] { load_torchscript_classifier(path); }),
              HasSubstr("deep, more than the 200 baton reads"));
}

}  // namespace
}  // namespace baton
