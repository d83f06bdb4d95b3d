#include "baton/models/safetensors.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/models/zoo.h"
#include "common/test_util.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using ::testing::HasSubstr;

void write_bytes(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// A file of the format written by hand: the header's length, the header, the data.
std::string file_of(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

TEST(Safetensors, EveryDtypeRoundTripsWithItsShapeAndTheMetadata) {
  const testing::TempDir tmp("safetensors");
  const std::string path = (tmp.path() / "t.safetensors").string();
  torch::manual_seed(1);
  const NamedTensors tensors = {{"f32", torch::randn({3, 4})},
                                {"f16", torch::randn({5}).to(torch::kHalf)},
                                {"bf16", torch::randn({2, 2}).to(torch::kBFloat16)},
                                {"f64", torch::randn({1, 2, 3}, torch::kDouble)},
                                {"i64", torch::arange(6).view({2, 3})},
                                {"u8", torch::arange(7).to(torch::kByte)},
                                {"bool", torch::tensor({true, false, true})},
                                {"scalar", torch::tensor(3.5f)},
                                {"empty", torch::zeros({0, 4})},
                                {"strided", torch::randn({4, 6}).t()}};
  write_safetensors(path, tensors, {{"format", "pt"}});
  const NamedTensors back = read_safetensors(path);
  ASSERT_EQ(back.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(back[i].first, tensors[i].first);  // the writer's order: the header keeps it
    EXPECT_EQ(back[i].second.scalar_type(), tensors[i].second.scalar_type()) << tensors[i].first;
    EXPECT_TRUE(back[i].second.equal(tensors[i].second)) << tensors[i].first;
  }
  EXPECT_TRUE(is_safetensors(path));
  const std::string bytes = testing::read_file(path);
  EXPECT_NE(bytes.find("\"__metadata__\":{\"format\":\"pt\"}"), std::string::npos);
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  EXPECT_EQ(header % 8, 0u) << "the data starts 8-byte aligned";
  EXPECT_THAT(error_of([&] {
                write_safetensors(path, {{"c", torch::randn({2}, torch::kComplexFloat)}});
              }),
              HasSubstr("has no safetensors name"));
  EXPECT_THAT(error_of([&] {
                write_safetensors(path, {{"a", torch::ones(1)}, {"a", torch::ones(1)}});
              }),
              HasSubstr("'a' named twice"));
}

TEST(Safetensors, AFileThatIsNotOneIsNamedWithWhatIsWrong) {
  const testing::TempDir tmp("safetensors_bad");
  auto error = [&](const std::string& name, const std::string& bytes) {
    write_bytes(tmp.path() / name, bytes);
    return error_of([&] { read_safetensors((tmp.path() / name).string()); });
  };
  const std::string eight(8, 'x');
  EXPECT_THAT(error("short.st", "abc"), HasSubstr("short.st: 3 bytes: not a safetensors file"));
  EXPECT_THAT(error("long.st", file_of("{}", "") + "z"), HasSubstr("the tensors hold 0 bytes but the file has 1"));
  EXPECT_THAT(error("huge.st", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}"),
              HasSubstr("huge.st: a header of"));
  EXPECT_THAT(error("json.st", file_of("{not json", "")), HasSubstr("json.st: the header is not JSON"));
  EXPECT_THAT(error("dtype.st", file_of(R"({"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", "x")),
              HasSubstr("tensor 'a': dtype \"F8_E4M3\" is not one baton reads"));
  EXPECT_THAT(error("shape.st", file_of(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight)),
              HasSubstr("tensor 'a': shape [3] of F32 is 12 bytes, but data_offsets [0,8] hold 8"));
  EXPECT_THAT(error("gap.st", file_of(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})", eight)),
              HasSubstr("tensor 'a' overlaps another or leaves a gap"));
  EXPECT_THAT(error("overlap.st", file_of(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                                          R"("b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
                                          eight)),
              HasSubstr("overlaps another or leaves a gap"));
  EXPECT_THAT(error("cut.st", file_of(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight)),
              HasSubstr("the tensors hold 16 bytes but the file has 8"));
  EXPECT_THAT(error("missing.st", file_of(R"({"a":{"dtype":"F32","shape":[2]}})", eight)),
              HasSubstr("tensor 'a': expected {dtype, shape, data_offsets}"));
  EXPECT_THAT(error_of([&] { read_safetensors((tmp.path() / "none.st").string()); }), HasSubstr("none.st"));
  fs::create_directory(tmp.path() / "dir.st");
  EXPECT_THAT(error_of([&] { read_safetensors((tmp.path() / "dir.st").string()); }), HasSubstr("not a regular file"));
  EXPECT_FALSE(is_safetensors((tmp.path() / "short.st").string()));
  EXPECT_FALSE(is_safetensors((tmp.path() / "huge.st").string()));
  EXPECT_FALSE(is_safetensors((tmp.path() / "dir.st").string()));
}

// The zoo's ResNets carry torchvision's names: its state dicts have 122 and 320 entries.
TEST(Safetensors, ZooResNetsHaveTorchvisionsNamesAndLoadTheirOwnWeights) {
  auto resnet18 = make_model("resnet18", ModelOptions().input_shape({3, 64, 64}).num_classes(1000));
  const NamedTensors names = model_tensors(*resnet18);
  EXPECT_EQ(names.size(), 122u);
  std::set<std::string> keys;
  for (const auto& [name, t] : names) keys.insert(name);
  for (const char* want :
       {"conv1.weight", "bn1.running_var", "bn1.num_batches_tracked", "layer1.0.conv1.weight",
        "layer2.0.downsample.0.weight", "layer2.0.downsample.1.bias", "layer4.1.bn2.weight", "fc.weight", "fc.bias"}) {
    EXPECT_EQ(keys.count(want), 1u) << want;
  }
  auto resnet50 = make_model("resnet50", ModelOptions().input_shape({3, 64, 64}).num_classes(1000));
  EXPECT_EQ(model_tensors(*resnet50).size(), 320u);
  int64_t parameters = 0;
  for (const auto& p : resnet50->parameters()) parameters += p.numel();
  EXPECT_EQ(parameters, 25557032);  // torchvision's resnet50

  const testing::TempDir tmp("safetensors_model");
  const std::string path = (tmp.path() / "r18.safetensors").string();
  write_safetensors(path, names);
  torch::manual_seed(9);
  auto other = make_model("resnet18", ModelOptions().input_shape({3, 64, 64}).num_classes(1000));
  load_safetensors(*other, path);
  resnet18->eval();
  other->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor x = torch::randn({2, 3, 64, 64});
  EXPECT_TRUE(other->eval_forward(Batch{x, {}}).equal(resnet18->eval_forward(Batch{x, {}})));

  // A file with the "module." prefix (a baton state dict's) loads too; another model's does not.
  NamedTensors prefixed;
  for (const auto& [name, t] : names) prefixed.emplace_back("module." + name, t);
  write_safetensors((tmp.path() / "prefixed.st").string(), prefixed);
  load_safetensors(*other, (tmp.path() / "prefixed.st").string());
  auto ten = make_model("resnet18", ModelOptions().input_shape({3, 64, 64}).num_classes(10));
  EXPECT_THAT(error_of([&] { load_safetensors(*ten, path); }),
              HasSubstr("r18.safetensors: tensor 'fc.weight' has shape [1000, 512] but the model's is [10, 512]"));
  EXPECT_THAT(error_of([&] { load_safetensors(*resnet50, path); }), HasSubstr("r18.safetensors: "));
  // Both a tensor and its "module." twin: one would silently win.
  NamedTensors twins = names;
  twins.emplace_back("module.fc.bias", torch::zeros(1000));
  write_safetensors((tmp.path() / "twins.st").string(), twins);
  EXPECT_THAT(error_of([&] { load_safetensors(*other, (tmp.path() / "twins.st").string()); }),
              HasSubstr("twins.st: tensors 'fc.bias' and 'module.fc.bias' are both the model's 'fc.bias'"));
  NamedTensors fewer(names.begin() + 1, names.end());
  write_safetensors((tmp.path() / "fewer.st").string(), fewer);
  EXPECT_THAT(error_of([&] { load_safetensors(*other, (tmp.path() / "fewer.st").string()); }),
              HasSubstr("no tensor for the model's " + names.front().first));
  NamedTensors more = names;
  more.emplace_back("head.weight", torch::ones(2));
  write_safetensors((tmp.path() / "more.st").string(), more);
  EXPECT_THAT(error_of([&] { load_safetensors(*other, (tmp.path() / "more.st").string()); }),
              HasSubstr("tensors the model does not have: head.weight"));
}

}  // namespace
}  // namespace baton
