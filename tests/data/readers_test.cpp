#include "baton/data/readers.h"
#include "baton/io/file.h"

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/test_util.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

using testing::TempDir;

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes, bool gzip) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
}

std::vector<unsigned char> idx_u8(std::vector<uint32_t> dims, const std::vector<unsigned char>& values) {
  std::vector<unsigned char> out = {0, 0, 0x08, static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<unsigned char>(d >> shift));
  }
  out.insert(out.end(), values.begin(), values.end());
  return out;
}

using testing::error_of;

TEST(ReadIdx, ReadsGzipAndPlainFilesWithTheirShape) {
  TempDir dir;
  const auto bytes = idx_u8({2, 3}, {1, 2, 3, 4, 5, 6});
  write_bytes(dir.file("a.gz"), bytes, true);
  write_bytes(dir.file("a"), bytes, false);
  for (const char* name : {"a.gz", "a"}) {
    at::Tensor t = read_idx(dir.file(name));
    EXPECT_EQ(t.scalar_type(), at::kByte);
    EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 3}));
    EXPECT_TRUE(torch::equal(t, torch::tensor({{1, 2, 3}, {4, 5, 6}}, torch::kByte)));
  }
}

TEST(ReadIdx, ConvertsBigEndianFloats) {
  TempDir dir;
  std::vector<unsigned char> bytes = {0, 0, 0x0D, 1, 0, 0, 0, 2};
  for (float v : {1.5f, -2.0f}) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<unsigned char>(bits >> shift));
  }
  write_bytes(dir.file("f.idx"), bytes, false);
  EXPECT_TRUE(torch::equal(read_idx(dir.file("f.idx")), torch::tensor({1.5f, -2.0f})));
}

TEST(ReadIdx, RefusesBadFilesNamingThemAndTheProblem) {
  TempDir dir;
  EXPECT_THAT(error_of([&] { read_idx(dir.file("missing.gz")); }), HasSubstr("missing.gz: cannot open"));

  write_bytes(dir.file("magic"), {1, 2, 8, 1, 0, 0, 0, 1, 7}, false);
  EXPECT_THAT(error_of([&] { read_idx(dir.file("magic")); }), HasSubstr("magic: not an IDX file"));

  auto truncated = idx_u8({4, 4}, {1, 2, 3});
  write_bytes(dir.file("short"), truncated, false);
  EXPECT_THAT(error_of([&] { read_idx(dir.file("short")); }),
              HasSubstr("declares [4, 4] (28 bytes) but the file has 15 bytes"));

  write_bytes(dir.file("type"), {0, 0, 0x42, 1, 0, 0, 0, 1, 7}, false);
  EXPECT_THAT(error_of([&] { read_idx(dir.file("type")); }), HasSubstr("unknown IDX element type"));

  // A gzip stream cut in the middle.
  write_bytes(dir.file("cut.gz"), idx_u8({100, 100}, std::vector<unsigned char>(10000, 3)), true);
  const auto size = std::filesystem::file_size(dir.file("cut.gz"));
  std::filesystem::resize_file(dir.file("cut.gz"), size / 2);
  EXPECT_THAT(error_of([&] { read_idx(dir.file("cut.gz")); }), HasSubstr("cut.gz"));
}

std::vector<unsigned char> npy(const std::string& descr, const std::string& shape, const void* data, size_t n,
                               bool fortran = false) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::vector<unsigned char> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.push_back(static_cast<unsigned char>(header.size() & 0xff));
  out.push_back(static_cast<unsigned char>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  const auto* bytes = static_cast<const unsigned char*>(data);
  out.insert(out.end(), bytes, bytes + n);
  return out;
}

TEST(ReadNpy, ReadsWhatNumpySaveWrites) {
  TempDir dir;
  const float f[] = {1, 2, 3, 4, 5, 6};
  write_bytes(dir.file("x.npy"), npy("<f4", "(3, 2)", f, sizeof f), false);
  EXPECT_TRUE(torch::equal(read_npy(dir.file("x.npy")), torch::tensor({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}})));
  const int64_t l[] = {7, 8, 9};
  write_bytes(dir.file("y.npy"), npy("<i8", "(3,)", l, sizeof l), false);
  EXPECT_TRUE(torch::equal(read_array(dir.file("y.npy")), torch::tensor({7, 8, 9}, torch::kLong)));
  const unsigned char u[] = {1, 2};
  write_bytes(dir.file("u.npy"), npy("|u1", "(2,)", u, sizeof u), false);
  EXPECT_EQ(read_npy(dir.file("u.npy")).scalar_type(), at::kByte);
}

TEST(ReadNpy, RefusesWhatItCannotRead) {
  TempDir dir;
  const float f[] = {1, 2};
  write_bytes(dir.file("big.npy"), npy(">f4", "(2,)", f, sizeof f), false);
  EXPECT_THAT(error_of([&] { read_npy(dir.file("big.npy")); }), HasSubstr("big-endian"));
  write_bytes(dir.file("fortran.npy"), npy("<f4", "(2,)", f, sizeof f, true), false);
  EXPECT_THAT(error_of([&] { read_npy(dir.file("fortran.npy")); }), HasSubstr("Fortran"));
  write_bytes(dir.file("short.npy"), npy("<f4", "(3,)", f, sizeof f), false);
  EXPECT_THAT(error_of([&] { read_npy(dir.file("short.npy")); }),
              HasSubstr("short.npy: .npy header declares shape (3,)"));
  write_bytes(dir.file("complex.npy"), npy("<c8", "(1,)", f, sizeof f), false);
  EXPECT_THAT(error_of([&] { read_npy(dir.file("complex.npy")); }), HasSubstr("unsupported dtype '<c8'"));
  write_bytes(dir.file("text.npy"), {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'}, false);
  EXPECT_THAT(error_of([&] { read_npy(dir.file("text.npy")); }), HasSubstr("not a .npy file"));
}

}  // namespace
}  // namespace baton

namespace baton {
namespace {

TEST(WriteNpy, RoundTripsThroughReadNpy) {
  const TempDir dir_tmp("readers");
  const std::string dir = dir_tmp.str();
  for (const at::Tensor& t :
       {torch::randn({3, 5}), torch::arange(7, torch::kLong), torch::tensor({1, 2}, torch::kByte)}) {
    write_npy(dir + "/t.npy", t);
    EXPECT_TRUE(torch::equal(read_npy(dir + "/t.npy"), t));
  }
  baton::remove_tree(dir);
}

// The fuzzers' corpora through the real readers (from files): each input is read or refused with
// a runtime_error naming the file; what is read has the shape its header declares.
void read_corpus(const std::string& fuzzer, at::Tensor (*read)(const std::string&), const std::string& suffix) {
  const TempDir dir_tmp("readers");
  const std::string dir = dir_tmp.str();
  int read_whole = 0;
  const int inputs = testing::for_each_corpus_input(fuzzer, [&](const std::string& name, const std::string& bytes) {
    const std::string path = dir + "/" + name + suffix;
    std::ofstream(path, std::ios::binary) << bytes;
    try {
      read(path);
      ++read_whole;
    } catch (const std::runtime_error& e) {
      EXPECT_THAT(e.what(), HasSubstr(path)) << name;
    }
  });
  EXPECT_GE(inputs, 4);
  EXPECT_GE(read_whole, 3);
  baton::remove_tree(dir);
}

TEST(FuzzCorpus, IdxAndNpyReadersRefuseOrReadEveryInput) {
  read_corpus("idx_reader", read_idx, "");
  read_corpus("npy_reader", read_npy, ".npy");
}

}  // namespace
}  // namespace baton
