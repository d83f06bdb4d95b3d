// TensorBoard event files (src/loggers/tensorboard_logger.cpp): TFRecords with their CRCs that read back.
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/core/engine.h"
#include "baton/core/state.h"
#include "baton/loggers/tensorboard_logger.h"
#include "common/test_util.h"

namespace baton {
namespace {

using testing::TempDir;

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(tensorboard::crc32c("123456789"), 0xE3069283U);
  EXPECT_EQ(tensorboard::crc32c(std::string(32, '\0')), 0x8A9136AAU);
  EXPECT_EQ(tensorboard::crc32c(std::string(32, '\xff')), 0x62A8AB43U);
  EXPECT_EQ(tensorboard::crc32c(""), 0U);
}

// A minimal protobuf reader: field number -> raw value (varint as number, others as bytes).
struct Field {
  int number;
  int wire;
  uint64_t varint = 0;
  std::string bytes;
};
std::vector<Field> parse(std::string_view data) {
  std::vector<Field> out;
  std::size_t i = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0; i < data.size(); shift += 7) {
      const auto b = static_cast<unsigned char>(data[i++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  };
  while (i < data.size()) {
    const uint64_t key = varint();
    Field f{static_cast<int>(key >> 3), static_cast<int>(key & 7), 0, {}};
    if (f.wire == 0) f.varint = varint();
    if (f.wire == 1) f.bytes = std::string(data.substr(i, 8)), i += 8;
    if (f.wire == 5) f.bytes = std::string(data.substr(i, 4)), i += 4;
    if (f.wire == 2) {
      const auto n = static_cast<std::size_t>(varint());
      f.bytes = std::string(data.substr(i, n));
      i += n;
    }
    out.push_back(f);
  }
  return out;
}
const Field* find(const std::vector<Field>& fields, int number) {
  for (const auto& f : fields) {
    if (f.number == number) return &f;
  }
  return nullptr;
}

TEST(TensorBoardLogger, WritesTFRecordsThatReadBack) {
  const TempDir dir("loggers");
  std::string path;
  {
    TensorBoardLogger tb((dir.path() / "tensorboard").string());
    path = tb.path();
    tb.log_metrics({{"train/loss", 0.5}, {"eval/accuracy", 0.875}}, 3);
    tb.log_hyperparameters({{"lr", 0.1}});
    State state;
    Logger logger(state);
    tb.close(state, logger);
  }
  EXPECT_THAT(std::filesystem::path(path).filename().string(), ::testing::StartsWith("events.out.tfevents."));
  const std::string file = testing::read_file(path);
  std::vector<std::string> events;
  std::size_t i = 0;
  while (i < file.size()) {
    ASSERT_GE(file.size() - i, 12U);
    uint64_t length = 0;
    uint32_t length_crc = 0;
    std::memcpy(&length, file.data() + i, 8);
    std::memcpy(&length_crc, file.data() + i + 8, 4);
    EXPECT_EQ(length_crc, tensorboard::masked_crc32c(std::string_view(file.data() + i, 8)));
    const std::string_view data(file.data() + i + 12, length);
    uint32_t data_crc = 0;
    std::memcpy(&data_crc, file.data() + i + 12 + length, 4);
    EXPECT_EQ(data_crc, tensorboard::masked_crc32c(data));
    events.emplace_back(data);
    i += 12 + length + 4;
  }
  ASSERT_EQ(events.size(), 4U);  // version, 2 scalars, hyperparameters
  EXPECT_EQ(find(parse(events[0]), 3)->bytes, "brain.Event:2");
  std::map<std::string, float> scalars;
  for (int e = 1; e <= 2; ++e) {
    const auto event = parse(events[static_cast<std::size_t>(e)]);
    EXPECT_EQ(find(event, 2)->varint, 3U);  // step
    const auto value = parse(find(parse(find(event, 5)->bytes), 1)->bytes);
    float v = 0;
    std::memcpy(&v, find(value, 2)->bytes.data(), 4);
    scalars[find(value, 1)->bytes] = v;
  }
  EXPECT_FLOAT_EQ(scalars["train/loss"], 0.5F);
  EXPECT_FLOAT_EQ(scalars["eval/accuracy"], 0.875F);
  const auto text = parse(find(parse(find(parse(events[3]), 5)->bytes), 1)->bytes);
  EXPECT_EQ(find(text, 1)->bytes, "hyperparameters");
  EXPECT_THAT(find(parse(find(text, 8)->bytes), 8)->bytes, ::testing::HasSubstr("\"lr\": 0.1"));
}

TEST(TensorBoardLogger, TwoLoggersInOneSecondWriteTwoFiles) {
  const TempDir dir("loggers");
  TensorBoardLogger a((dir.path() / "tb").string());
  TensorBoardLogger b((dir.path() / "tb").string());
  EXPECT_NE(a.path(), b.path());
  EXPECT_EQ(
      std::distance(std::filesystem::directory_iterator(dir.path() / "tb"), std::filesystem::directory_iterator()), 2);
}

}  // namespace
}  // namespace baton
