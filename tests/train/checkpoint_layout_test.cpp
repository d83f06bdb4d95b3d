// The checkpoint file's layout (src/train/checkpoint_layout.cpp), parsed without LibTorch: what a
// valid file holds, and each way a file can be wrong named before a byte of a tensor is trusted.
#include "train/checkpoint_layout.h"

#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/train/checkpoint.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

template <typename T>
void put(std::string& bytes, T value) {
  bytes.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// A file with a right header and checksum around `meta` and `data`: what is wrong is inside.
std::string framed(const std::string& meta, const std::string& data, uint32_t version = kCheckpointFormatVersion) {
  std::string body;
  put(body, static_cast<uint32_t>(meta.size()));
  body += meta + data;
  std::string bytes(kCheckpointMagic, sizeof kCheckpointMagic);
  put(bytes, version);
  put(bytes, checkpoint_crc(body.data(), body.size()));
  put(bytes, static_cast<uint64_t>(body.size()));
  return bytes + body;
}

std::string parse_error(const std::string& bytes) {
  return error_of([&] { parse_checkpoint_layout(bytes, "x.ckpt"); });
}

TEST(CheckpointLayout, AValidFileListsEveryTensorWithItsPlace) {
  StateDict sd;
  sd.values["timestamp"] = {{"batch", 3}};
  sd.tensors["model/w"] = torch::ones({2, 3});
  sd.tensors["step"] = torch::arange(4, torch::kLong);
  const std::string bytes = encode_checkpoint(sd, {{"run_name", "r"}});
  const CheckpointLayout layout = parse_checkpoint_layout(bytes, "x.ckpt");
  ASSERT_EQ(layout.tensors.size(), 2U);
  std::size_t total = 0;
  for (const TensorEntry& e : layout.tensors) {
    if (e.name == "model/w") {
      EXPECT_EQ(e.dtype, "float32");
      EXPECT_EQ(e.shape, (std::vector<int64_t>{2, 3}));
      EXPECT_EQ(e.nbytes, 24U);
    } else {
      EXPECT_EQ(e.name, "step");
      EXPECT_EQ(e.dtype, "int64");
      EXPECT_EQ(e.nbytes, 32U);
    }
    EXPECT_LE(layout.data_start + e.offset + e.nbytes, bytes.size());
    total += e.nbytes;
  }
  EXPECT_EQ(total, 56U);
  EXPECT_EQ(dtype_size("bfloat16"), 2U);
  EXPECT_EQ(dtype_size("float64"), 8U);
  EXPECT_EQ(dtype_size("complex"), 0U);
}

TEST(CheckpointLayout, HeadersLengthsAndChecksumsAreChecked) {
  EXPECT_EQ(parse_error(""), "x.ckpt: the file is empty");
  EXPECT_EQ(parse_error("PK\x03\x04 a zip file, as torch.save writes"),
            "x.ckpt: not a baton checkpoint (no BATONCK header)");
  const std::string good = framed(R"({"tensors": []})", "");
  EXPECT_NO_THROW(parse_checkpoint_layout(good, "x.ckpt"));
  EXPECT_THAT(parse_error(framed(R"({"tensors": []})", "", 7)),
              HasSubstr("checkpoint format version 7 (this baton reads version 1)"));
  EXPECT_THAT(parse_error(good.substr(0, good.size() - 1)), HasSubstr("truncated or padded"));
  EXPECT_THAT(parse_error(good + "x"), HasSubstr("truncated or padded"));
  std::string flipped = good;
  flipped.back() ^= 0x20;
  EXPECT_EQ(parse_error(flipped), "x.ckpt: corrupt: the checksum does not match the contents");
}

TEST(CheckpointLayout, MetadataAndTensorsThatDoNotFitTheirBytesAreNamed) {
  EXPECT_EQ(parse_error(framed("{not json", "")), "x.ckpt: corrupt: the metadata is not JSON");
  EXPECT_EQ(parse_error(framed(R"({"run": 1})", "")), "x.ckpt: corrupt: the metadata lists no tensors");
  const auto tensor = [](const std::string& fields) { return R"({"tensors": [{"name": "w", )" + fields + "}]}"; };
  const std::string eight(8, '\0');
  EXPECT_NO_THROW(parse_checkpoint_layout(
      framed(tensor(R"("dtype": "float32", "shape": [2], "offset": 0, "nbytes": 8)"), eight), "x"));
  EXPECT_EQ(parse_error(framed(tensor(R"("dtype": "float32", "shape": [3], "offset": 0, "nbytes": 12)"), eight)),
            "x.ckpt: corrupt: tensor 'w' does not fit its bytes");
  EXPECT_EQ(parse_error(framed(tensor(R"("dtype": "float32", "shape": [2], "offset": 4, "nbytes": 8)"), eight)),
            "x.ckpt: corrupt: tensor 'w' does not fit its bytes");
  EXPECT_EQ(parse_error(framed(tensor(R"("dtype": "float12", "shape": [2], "offset": 0, "nbytes": 8)"), eight)),
            "x.ckpt: tensor 'w' has an unknown dtype 'float12'");
  EXPECT_EQ(parse_error(framed(tensor(R"("dtype": "float32", "shape": [-2], "offset": 0, "nbytes": 8)"), eight)),
            "x.ckpt: corrupt: tensor 'w' has a size that is not a whole number: -2");
  EXPECT_EQ(parse_error(framed(tensor(R"("dtype": "float32", "shape": [1099511627776, 1099511627776], "offset": 0,
                                          "nbytes": 8)"),
                               eight)),
            "x.ckpt: tensor 'w' has a bad shape");
  EXPECT_EQ(parse_error(framed(tensor(R"("dtype": "float32", "shape": 2, "offset": 0, "nbytes": 8)"), eight)),
            "x.ckpt: corrupt: tensor 'w' has no shape");
  EXPECT_EQ(parse_error(framed(R"({"tensors": [{"name": "w"}]})", eight)),
            "x.ckpt: corrupt: a tensor's description is malformed");
}

}  // namespace
}  // namespace baton
