// Token shards and data sets (src/data/tokens.cpp): llm.c's format written and read, windows and
// their order, bad shards named.
#include "baton/data/tokens.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/core/options.h"
#include "baton/data/tokenizer.h"
#include "common/test_util.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using ::testing::HasSubstr;
using testing::read_file;
using ::testing::StartsWith;
using testing::write_file;

std::vector<uint16_t> counting(int64_t n, int64_t modulo, int64_t from = 0) {
  std::vector<uint16_t> t(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = static_cast<uint16_t>((from + i) % modulo);
  return t;
}

TEST(TokenShards, AShardCutShortOrReplacedWhileTrainingIsAnErrorNamingItNeverACrash) {
  const testing::TempDir tmp("token_shards_change");
  const std::string path = (tmp.path() / "a.bin").string();
  write_token_shard(path, counting(5000, 100));
  const auto data = TokenDataset::open({path}, TokenOptions().context(16).vocab_size(100));
  EXPECT_EQ(data->get_batch(torch::arange(4)).input.size(0), 4);
  // Cut short in place (a copy still being written, a full disk): once a SIGBUS under a memory map.
  ASSERT_EQ(::truncate(path.c_str(), 1024 + 100), 0);
  EXPECT_THAT(error_of([&] { data->get_batch(torch::tensor({200})); }),
              HasSubstr("a.bin: the token shard changed while it was read (now 1124 bytes, was 11024)"));
}

TEST(TokenShards, AShardRewrittenInPlaceIsAnErrorOneReplacedByARenameIsReadAsItWasOpened) {
  const testing::TempDir tmp("token_shards_replaced");
  const std::string path = (tmp.path() / "a.bin").string();
  write_token_shard(path, counting(5000, 100));
  const auto data = TokenDataset::open({path}, TokenOptions().context(16).vocab_size(100).random_offsets(false));
  const at::Tensor first = data->get_batch(torch::tensor({1})).input;
  write_token_shard(path + ".new", counting(5000, 100, 1));  // a new version renamed over it
  fs::rename(path + ".new", path);
  EXPECT_TRUE(torch::equal(data->get_batch(torch::tensor({1})).input, first));  // the one indexed, whole
  fs::remove(path);
  EXPECT_TRUE(torch::equal(data->get_batch(torch::tensor({1})).input, first));
  const std::string other = (tmp.path() / "b.bin").string();
  write_token_shard(other, counting(5000, 100));
  const auto second = TokenDataset::open({other}, TokenOptions().context(16).vocab_size(100));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {  // the same size, other tokens, written in place (cp over it)
    std::fstream f(other, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2000);
    f.write("\x05\x00", 2);
  }
  EXPECT_THAT(error_of([&] { second->get_batch(torch::tensor({1})); }),
              HasSubstr("b.bin: the token shard changed while it was read (now 11024 bytes, was 11024, rewritten)"));
}

TEST(TokenShards, WrittenShardsReadBackAndBadShardsNameTheFile) {
  const testing::TempDir tmp("token_shards");
  const fs::path dir = tmp.path();
  const std::vector<uint16_t> tokens = counting(1000, 65536, 65000);  // up to 65535: the whole uint16 range
  write_token_shard((dir / "a.bin").string(), tokens);
  EXPECT_EQ(fs::file_size(dir / "a.bin"), 1024 + 2000u);
  const TokenShard shard((dir / "a.bin").string());
  ASSERT_EQ(shard.size(), 1000);
  EXPECT_EQ(shard.token_bytes(), 2);
  std::vector<uint32_t> back(1000);
  shard.read(0, 1000, back.data());
  EXPECT_EQ(back, std::vector<uint32_t>(tokens.begin(), tokens.end()));
  shard.read(10, 3, back.data());  // a window inside the shard, widened
  EXPECT_EQ(back[0], tokens[10]);
  EXPECT_EQ(back[2], tokens[12]);

  const std::string good = read_file(dir / "a.bin");
  auto shard_error = [&](const std::string& name, const std::string& bytes) {
    write_file(dir / name, bytes);
    return error_of([&] { TokenShard((dir / name).string()); });
  };
  std::string magic = good;
  magic[0] = 'x';
  EXPECT_THAT(shard_error("magic.bin", magic), HasSubstr("magic.bin: magic"));
  EXPECT_THAT(shard_error("magic.bin", magic), HasSubstr("not a token shard"));
  std::string version = good;
  version[4] = 2;
  EXPECT_THAT(shard_error("version.bin", version), HasSubstr("version.bin: version 2"));
  EXPECT_THAT(shard_error("short.bin", good.substr(0, good.size() - 1)),
              HasSubstr("short.bin: the header counts 1000 tokens (3024 bytes) but the file has 3023 bytes"));
  EXPECT_THAT(shard_error("long.bin", good + "ab"), HasSubstr("but the file has 3026 bytes"));
  EXPECT_THAT(shard_error("header.bin", good.substr(0, 100)), HasSubstr("header.bin: 100 bytes, shorter than"));
  EXPECT_THAT(error_of([&] { TokenShard((dir / "none.bin").string()); }), HasSubstr("none.bin"));
  fs::create_directory(dir / "folder.bin");
  EXPECT_THAT(error_of([&] { TokenShard((dir / "folder.bin").string()); }),
              HasSubstr("folder.bin: a folder, not a regular file"));
  ASSERT_EQ(::mkfifo((dir / "fifo.bin").c_str(), 0600), 0);
  EXPECT_THAT(error_of([&] { TokenShard((dir / "fifo.bin").string()); }),
              HasSubstr("fifo.bin: a FIFO, not a regular file"));
}

// A shard as llm.c's own writer makes it (dev/data/data_common.py's write_datafile), run with numpy:
// tokens (i * 7919) % modulo for i below n; "gpt-2" (uint16, magic 20240520, version 1) or
// "llama-3" (uint32, magic 20240801, version 7). Returns python's exit status.
int numpy_shard(const fs::path& file, int64_t n, int64_t modulo, bool llama3) {
  const std::string script =
      "import numpy as np, sys\n"
      "toks = (np.arange(" +
      std::to_string(n) + ", dtype=np.int64) * 7919) % " + std::to_string(modulo) +
      "\n"
      "header = np.zeros(256, dtype=np.int32)\n"
      "header[0] = " +
      (llama3 ? "20240801; header[1] = 7" : "20240520; header[1] = 1") +
      "; header[2] = len(toks)\n"
      "with open(sys.argv[1], 'wb') as f:\n"
      "    f.write(header.tobytes()); f.write(np.array(toks, dtype=np." +
      (llama3 ? "uint32" : "uint16") + ").tobytes())\n";
  const fs::path writer = file.parent_path() / "write.py";
  write_file(writer, script);
  return std::system(("/usr/bin/python3 " + writer.string() + " " + file.string()).c_str());
}

TEST(TokenShards, AShardWrittenByNumpyReadsBackIdentically) {
  const testing::TempDir tmp("token_numpy");
  const fs::path file = fs::path(tmp.path()) / "numpy.bin";
  ASSERT_EQ(numpy_shard(file, 70000, 50257, false), 0) << "needs /usr/bin/python3 with numpy (Debian's python3-numpy)";
  const TokenShard shard(file.string());
  ASSERT_EQ(shard.size(), 70000);
  std::vector<uint32_t> tokens(static_cast<std::size_t>(shard.size()));
  shard.read(0, shard.size(), tokens.data());
  for (int64_t i = 0; i < shard.size(); ++i) {
    ASSERT_EQ(tokens[static_cast<std::size_t>(i)], (i * 7919) % 50257) << "token " << i;
  }
}

// Llama 3's vocabulary (128,256 tokens) needs uint32: llm.c's "llama-3" shards (magic 20240801,
// version 7), written by numpy as llm.c does, read back; baton's writer gives the same bytes; a
// gpt-shaped dataset over them reads tokens above 65,535.
TEST(TokenShards, Uint32ShardsOfLlmcsLlama3FormatReadBackAndTrainWindows) {
  const testing::TempDir tmp("token_uint32");
  const fs::path file = fs::path(tmp.path()) / "numpy.bin";
  ASSERT_EQ(numpy_shard(file, 5000, 128256, true), 0) << "needs /usr/bin/python3 with numpy (Debian's python3-numpy)";
  const TokenShard shard(file.string());
  ASSERT_EQ(shard.size(), 5000);
  EXPECT_EQ(shard.token_bytes(), 4);
  std::vector<uint32_t> tokens(5000);
  shard.read(0, 5000, tokens.data());
  for (int64_t i = 0; i < 5000; ++i) ASSERT_EQ(tokens[static_cast<std::size_t>(i)], (i * 7919) % 128256) << i;
  write_token_shard((fs::path(tmp.path()) / "baton.bin").string(), tokens);
  EXPECT_EQ(read_file(fs::path(tmp.path()) / "baton.bin"), read_file(file));

  auto data = TokenDataset::open({file.string()}, TokenOptions().context(64).random_offsets(false));
  EXPECT_EQ(data->num_classes(), int64_t{*std::max_element(tokens.begin(), tokens.end())} + 1);
  EXPECT_GT(data->num_classes(), 65536);
  const Batch b = data->get_batch(torch::tensor({1}));
  EXPECT_EQ(b.input[0][0].item<int64_t>(), (64 * 7919) % 128256);
  EXPECT_THAT(error_of([&] { TokenDataset::open({file.string()}, TokenOptions().context(64).vocab_size(65536)); }),
              HasSubstr("is not below vocab_size 65536"));
}

TEST(TokenShards, GlobsAreSortedRegularFilesAndAGlobOfNothingIsNamed) {
  const testing::TempDir tmp("token_globs");
  const fs::path dir = tmp.path();
  for (const char* name : {"train_002.bin", "train_000.bin", "train_001.bin", "val_000.bin"}) {
    write_token_shard((dir / name).string(), counting(10, 5));
  }
  fs::create_directory(dir / "train_003.bin");  // a folder: not a shard
  const auto files = expand_globs({(dir / "train_*.bin").string(), (dir / "train_000.bin").string()}, "train_files");
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(fs::path(files[0]).filename(), "train_000.bin");
  EXPECT_EQ(fs::path(files[2]).filename(), "train_002.bin");
  EXPECT_THAT(error_of([&] { expand_globs({(dir / "test_*.bin").string()}, "eval_files"); }),
              StartsWith("eval_files: '" + (dir / "test_*.bin").string() + "' matches no regular file"));
}

TEST(TokenDataset, WindowsStayInTheirShardAndTheirTargetsAreTheNextTokens) {
  const testing::TempDir tmp("token_windows");
  const fs::path dir = tmp.path();
  write_token_shard((dir / "a.bin").string(), counting(100, 1000));      // 0..99: 9 windows of 10 + 1
  write_token_shard((dir / "b.bin").string(), counting(35, 1000, 500));  // 500..534: 3 windows
  write_token_shard((dir / "c.bin").string(), counting(5, 1000, 900));   // too short for one window
  const std::vector<std::string> files = {(dir / "a.bin").string(), (dir / "b.bin").string(), (dir / "c.bin").string()};
  auto fixed = TokenDataset::open(files, TokenOptions().context(10).random_offsets(false));
  EXPECT_EQ(fixed->size(), 12);
  EXPECT_EQ(fixed->num_classes(), 905);  // the largest token + 1 without vocab_size
  EXPECT_EQ(fixed->tokens_per_example(), 10);
  EXPECT_EQ(fixed->tokens(), 140);
  const Batch b = fixed->get_batch(torch::tensor({int64_t{8}, int64_t{9}, int64_t{11}}));
  EXPECT_EQ(b.input.sizes(), (std::vector<int64_t>{3, 10}));
  EXPECT_EQ(b.input.scalar_type(), torch::kLong);
  EXPECT_TRUE(b.input[0].equal(torch::arange(80, 90)));
  EXPECT_TRUE(b.target[0].equal(torch::arange(81, 91)));
  EXPECT_TRUE(b.input[1].equal(torch::arange(500, 510)));  // window 9 is b.bin's first
  EXPECT_TRUE(b.input[2].equal(torch::arange(520, 530)));
  EXPECT_TRUE(b.target[2].equal(torch::arange(521, 531)));

  // Random offsets: from (seed, epoch, index) only, below the context, never past the shard's end.
  auto random = TokenDataset::open(files, TokenOptions().context(10).seed(7));
  const at::Tensor all = torch::arange(random->size());
  const Batch e0 = random->get_epoch_batch(all, 0);
  EXPECT_TRUE(e0.input.equal(random->get_epoch_batch(all, 0).input));
  EXPECT_TRUE(e0.input.slice(1, 1).equal(e0.target.slice(1, 0, 9)));
  EXPECT_FALSE(e0.input.equal(random->get_epoch_batch(all, 1).input));
  EXPECT_FALSE(
      e0.input.equal(TokenDataset::open(files, TokenOptions().context(10).seed(8))->get_epoch_batch(all, 0).input));
  for (int64_t epoch = 0; epoch < 30; ++epoch) {
    const Batch e = random->get_epoch_batch(all, epoch);
    for (int64_t i = 0; i < random->size(); ++i) {
      const int64_t first = e.input[i][0].item<int64_t>();
      const int64_t start = i < 9 ? i * 10 : 500 + (i - 9) * 10;
      ASSERT_GE(first, start);
      ASSERT_LT(first, start + 10);
      ASSERT_LE(e.target[i][9].item<int64_t>(), i < 9 ? 99 : 534) << "window " << i << " left its shard";
    }
  }
  // One window, fetched alone or in a batch, is the same.
  EXPECT_TRUE(
      random->get_epoch_batch(torch::tensor({int64_t{4}}), 3).input[0].equal(random->get_epoch_batch(all, 3).input[4]));
}

TEST(TokenDataset, BadOptionsAndTokensOutsideTheVocabularyAreNamed) {
  const testing::TempDir tmp("token_bad");
  const fs::path dir = tmp.path();
  write_token_shard((dir / "a.bin").string(), counting(100, 50));
  const std::vector<std::string> files = {(dir / "a.bin").string()};
  EXPECT_THAT(error_of([&] { TokenDataset::open(files, TokenOptions().context(100)); }),
              HasSubstr("no shard of 1 holds a window of 100 tokens and its next token (100 tokens in all)"));
  EXPECT_THAT(error_of([&] { TokenDataset::open(files, TokenOptions().context(0)); }),
              HasSubstr("expected a window of 1 to 16777216 tokens, got 0"));
  EXPECT_THAT(error_of([&] { TokenDataset::open(files, TokenOptions().vocab_size(-1)); }),
              HasSubstr("expected 1 to 2147483647, or 0 to count them, got -1"));
  // Found when the data set opens (before a run is made), not at the batch that reads it.
  EXPECT_THAT(error_of([&] { TokenDataset::open(files, TokenOptions().context(10).vocab_size(40)); }),
              HasSubstr("a.bin: token 40 at position 40 is not below vocab_size 40"));
}

}  // namespace
}  // namespace baton
