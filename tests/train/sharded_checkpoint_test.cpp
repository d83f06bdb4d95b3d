#include "train/sharded_checkpoint.h"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/test_util.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The layout an index holds (what a trainer hands the reader).
nlohmann::json read_checkpoint_meta_values(const std::string& index) {
  std::shared_ptr<detail::ShardedCheckpoint> shards;
  return detail::read_checkpoint(index, false, &shards).state.values.at(detail::kShardedStateKey);
}

// An index and its 2 ranks' files as the trainer writes them: one chunk of two parameters (3 and 2
// elements, padded to 6: shards of 3), Adam's moments and step.
std::string write_sharded(const fs::path& dir, const std::string& id_of_rank1 = "id-1") {
  const std::string index = (dir / "ep0-ba4.ckpt").string();
  for (int r = 0; r < 2; ++r) {
    StateDict shard;
    shard.tensors["chunks/0/exp_avg"] = torch::arange(3.0).to(torch::kFloat) + 10 * r;
    shard.tensors["chunks/0/exp_avg_sq"] = torch::full({3}, 1.0 + r);
    shard.tensors["chunks/0/step"] = torch::tensor(int64_t{4});
    shard.values = {{"id", r == 0 ? "id-1" : id_of_rank1}, {"rank", r}, {"ranks", 2}};
    write_checkpoint(detail::optimizer_shard_path(index, r, 2), shard, nlohmann::json::object());
  }
  StateDict sd;
  sd.tensors["model/w"] = torch::zeros({3});
  sd.tensors["model/b"] = torch::zeros({2});
  sd.values[detail::kShardedStateKey] = {
      {"ranks", 2},
      {"id", "id-1"},
      {"chunks",
       {{{"optimizer", 0},
         {"shard", 3},
         {"params", nlohmann::json::array({nlohmann::json::array({"w", {3}}), nlohmann::json::array({"b", {2}})})},
         {"state", {"exp_avg", "exp_avg_sq", "step"}}}}}};
  write_checkpoint(index, sd, nlohmann::json::object());
  return index;
}

TEST(ShardedCheckpoint, ReadingJoinsEveryRanksShards) {
  const testing::TempDir dir("sharded_ckpt");
  const std::string index = write_sharded(dir.path());
  const CheckpointFile ckpt = read_checkpoint(index);
  EXPECT_FALSE(ckpt.state.values.contains(detail::kShardedStateKey)) << "whole now";
  // The chunk: rank 0's [0, 1, 2], rank 1's [10, 11, 12]: w is the first 3, b the next 2.
  EXPECT_TRUE(torch::equal(ckpt.state.tensors.at("optimizer_state/0/w/exp_avg"), torch::tensor({0.F, 1.F, 2.F})));
  EXPECT_TRUE(torch::equal(ckpt.state.tensors.at("optimizer_state/0/b/exp_avg"), torch::tensor({10.F, 11.F})));
  EXPECT_TRUE(torch::equal(ckpt.state.tensors.at("optimizer_state/0/b/exp_avg_sq"), torch::tensor({2.F, 2.F})));
  EXPECT_EQ(ckpt.state.tensors.at("optimizer_state/0/w/step").item<int64_t>(), 4);
  // One file of it, which reads without the ranks' files; an existing file is not overwritten.
  const std::string one = (dir.path() / "one.ckpt").string();
  EXPECT_EQ(consolidate_checkpoint(dir.path().string(), one), index) << "a folder: its newest checkpoint";
  EXPECT_EQ(detail::remove_orphan_shards(dir.path().string()), 0) << "their index is there";
  detail::remove_checkpoint(index);
  EXPECT_FALSE(fs::exists(detail::optimizer_shard_path(index, 1, 2))) << "the ranks' files go with the index";
  write_sharded(dir.path());
  fs::remove(index);  // a save killed before rank 0 wrote the index
  EXPECT_EQ(detail::remove_orphan_shards(dir.path().string()), 2);
  EXPECT_TRUE(
      torch::equal(read_checkpoint(one).state.tensors.at("optimizer_state/0/b/exp_avg"), torch::tensor({10.F, 11.F})));
  EXPECT_THAT(testing::error_of([&] { consolidate_checkpoint(one, one); }), HasSubstr("one.ckpt: exists"));
}

TEST(ShardedCheckpoint, AMissingOrForeignRankFileIsNamed) {
  const testing::TempDir dir("sharded_ckpt_bad");
  const std::string index = write_sharded(dir.path());
  fs::remove(detail::optimizer_shard_path(index, 1, 2));
  EXPECT_THAT(testing::error_of([&] { read_checkpoint(index); }), HasSubstr("ep0-ba4.ckpt: rank 1's file, "));
  EXPECT_THAT(testing::error_of([&] { read_checkpoint(index); }), HasSubstr("ep0-ba4.ckpt.rank1-of-2, is missing"));
  const std::string other = write_sharded(dir.path(), "id-of-another-save");
  EXPECT_THAT(testing::error_of([&] { read_checkpoint(other); }),
              HasSubstr("ep0-ba4.ckpt.rank1-of-2: is not rank 1's file of"));
}

// Weights in the ranks' files (save_format: sharded as written now): one chunk of w (4 elements)
// and b (1), shards of 3, so that w spans both files.
TEST(ShardedCheckpoint, WeightsComeFromTheRanksFilesAndARangeFromTheFilesThatHoldIt) {
  const testing::TempDir dir("sharded_ckpt_weights");
  const std::string index = (dir.path() / "ep0-ba2.ckpt").string();
  for (int r = 0; r < 2; ++r) {
    StateDict shard;
    shard.tensors["chunks/0/weights"] = r == 0 ? torch::tensor({1.F, 2.F, 3.F}) : torch::tensor({4.F, 5.F, 0.F});
    shard.tensors["chunks/0/exp_avg"] = shard.tensors["chunks/0/weights"] * 10;
    shard.tensors["chunks/0/step"] = torch::tensor(int64_t{2});
    shard.values = {{"id", "x"}, {"rank", r}, {"ranks", 2}};
    write_checkpoint(detail::optimizer_shard_path(index, r, 2), shard, nlohmann::json::object());
  }
  StateDict sd;
  sd.values[detail::kShardedStateKey] = {
      {"ranks", 2},
      {"id", "x"},
      {"chunks",
       {{{"optimizer", 0},
         {"shard", 3},
         {"params", nlohmann::json::array({nlohmann::json::array({"w", {2, 2}}), nlohmann::json::array({"b", {1}})})},
         {"state", {"exp_avg", "step"}},
         {"weights", true}}}}};
  write_checkpoint(index, sd, nlohmann::json::object());
  const CheckpointFile ckpt = read_checkpoint(index);
  EXPECT_TRUE(torch::equal(ckpt.state.tensors.at("model/w"), torch::tensor({1.F, 2.F, 3.F, 4.F}).view({2, 2})));
  EXPECT_TRUE(torch::equal(ckpt.state.tensors.at("model/b"), torch::tensor({5.F})));
  EXPECT_TRUE(torch::equal(ckpt.state.tensors.at("optimizer_state/0/b/exp_avg"), torch::tensor({50.F})));
  // Each rank of a sharded run reads its block only: ranges across the files.
  const detail::ShardedCheckpoint shards(index, read_checkpoint_meta_values(index));
  const auto& w = shards.params().at({0, "w"});
  EXPECT_TRUE(torch::equal(shards.read(w, "exp_avg", 1, 3), torch::tensor({20.F, 30.F, 40.F})));
  EXPECT_EQ(shards.read(w, "step", 0, 1).item<int64_t>(), 2);
  EXPECT_THAT(testing::error_of([&] { shards.read(w, "exp_avg", 2, 3); }), HasSubstr("does not add up"));
  // A rank's file cut short (a disk that filled) is named, nothing read from it.
  const std::string rank1 = detail::optimizer_shard_path(index, 1, 2);
  fs::resize_file(rank1, fs::file_size(rank1) - 4);
  EXPECT_THAT(testing::error_of([&] { read_checkpoint(index); }), HasSubstr("ep0-ba2.ckpt.rank1-of-2: truncated"));
}

}  // namespace
}  // namespace baton
