// Checkpoint files (src/train/checkpoint.cpp): values, tensors and metadata round-trip, damaged files
// are named, SHA-256 of files and weights.
#include "baton/train/checkpoint.h"

#include "baton/core/time.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/train/checkpoint_saver.h"
#include "common/test_util.h"
#include "train/checkpoint_fixtures.h"

namespace baton {
namespace {

using namespace checkpoint_fixtures;  // NOLINT(google-build-using-namespace)

using testing::error_of;
using ::testing::HasSubstr;

TEST_F(CheckpointFiles, RoundTripsValuesTensorsAndMetadata) {
  const StateDict sd = sample();
  write_checkpoint(path("a.ckpt"), sd, {{"recipe", "max_duration: 1ep\n"}});
  const CheckpointFile back = read_checkpoint(path("a.ckpt"));
  EXPECT_EQ(back.state.values, sd.values);
  ASSERT_EQ(back.state.tensors.size(), sd.tensors.size());
  for (const auto& [name, t] : sd.tensors) EXPECT_TRUE(torch::equal(back.state.tensors.at(name), t)) << name;
  EXPECT_EQ(back.meta["recipe"], "max_duration: 1ep\n");
  EXPECT_EQ(back.tensors.size(), 4u);
  // No temporary file is left beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1);
}

TEST_F(CheckpointFiles, DamagedFilesAreRecognisedAndNamed) {
  const std::string bytes = encode_checkpoint(sample(), {});
  auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(path(name), std::ios::binary) << content;
    return path(name);
  };
  EXPECT_THAT(error_of([&] { read_checkpoint(write("empty.ckpt", "")); }), HasSubstr("empty.ckpt: the file is empty"));
  EXPECT_THAT(error_of([&] { read_checkpoint(write("short.ckpt", bytes.substr(0, bytes.size() - 10))); }),
              HasSubstr("short.ckpt: truncated"));
  std::string flipped = bytes;
  flipped[flipped.size() - 3] ^= 0x10;
  EXPECT_THAT(error_of([&] { read_checkpoint(write("flip.ckpt", flipped)); }),
              HasSubstr("flip.ckpt: corrupt: the checksum"));
  EXPECT_THAT(error_of([&] { read_checkpoint(write("foreign.ckpt", "PK\x03\x04 a zip file, not ours at all")); }),
              HasSubstr("foreign.ckpt: not a baton checkpoint"));
  EXPECT_THAT(error_of([&] { read_checkpoint(path("missing.ckpt")); }), HasSubstr("missing.ckpt: cannot open"));
  std::string future = bytes;
  future[8] = 9;
  EXPECT_THAT(error_of([&] { read_checkpoint(write("future.ckpt", future)); }), HasSubstr("format version 9"));
}

TEST_F(CheckpointFiles, AnUnwritableFolderIsNamed) {
  EXPECT_THAT(error_of([&] { write_checkpoint(path("no/such/dir/a.ckpt"), sample(), {}); }),
              HasSubstr("cannot write in"));
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, WeightsHashIsEqualForEqualWeightsOnly) {
  StateDict a;
  a.tensors["model/w"] = torch::ones({3});
  a.tensors["optimizers/0"] = torch::ones({1});
  StateDict b;
  b.tensors["model/w"] = torch::ones({3});
  EXPECT_EQ(weights_sha256(a), weights_sha256(b));  // only the model's tensors count
  b.tensors["model/w"][1] = 2.0f;
  EXPECT_NE(weights_sha256(a), weights_sha256(b));
}

// The fuzzers' corpora (tests/fuzz/corpus) as regression inputs: each is read or refused with
// the parser's own error, never a crash or another exception.
TEST(FuzzCorpus, CheckpointReaderRefusesOrReadsEveryInput) {
  const int inputs =
      testing::for_each_corpus_input("checkpoint_reader", [](const std::string& name, const std::string& bytes) {
        try {
          decode_checkpoint(bytes, name);
        } catch (const CheckpointError&) {
        }
      });
  EXPECT_GE(inputs, 4);
}

TEST(FuzzCorpus, TimeParseRefusesOrReadsEveryInput) {
  const int inputs = testing::for_each_corpus_input("time_parse", [](const std::string& name, const std::string& text) {
    try {
      const Time t = Time::parse(text);
      EXPECT_EQ(Time::parse(t.to_string()), t) << name;
    } catch (const std::invalid_argument&) {
    }
  });
  EXPECT_GE(inputs, 9);
}

}  // namespace
}  // namespace baton
