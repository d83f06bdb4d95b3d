#include "baton/train/run_folder.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/train/recipe_file.h"
#include "common/test_util.h"

namespace baton {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using ::testing::HasSubstr;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The folders RunFolder moved files into (replaced-<time>...).
std::vector<fs::path> asides(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with("replaced-")) out.push_back(entry.path());
  }
  return out;
}

TEST(RunFolder, ClaimMakesTheFolderAndASecondClaimIsRefusedNamingTheHolder) {
  const testing::TempDir tmp("run_folder");
  const fs::path dir = tmp / "run";
  RunFolder folder = RunFolder::claim(dir);
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_TRUE(folder.held());
  // A lock held by this process is held for every claim in it: a second process is refused.
  const auto codes = testing::run_in_processes(1, [&](int) { (void)RunFolder::claim(dir); });
  EXPECT_EQ(codes[0], 1);
  EXPECT_THAT(error_of([&] {
                write(tmp / "file", "x");
                (void)RunFolder::claim(tmp / "file");
              }),
              HasSubstr("is there, not a folder"));
}

TEST(RunFolder, ARefusedRunLeavesNoFolderItMadeAndKeepsOneThatWasThere) {
  const testing::TempDir tmp("run_folder");
  RunFolder made = RunFolder::claim(tmp / "new");
  made.release_refused();
  EXPECT_FALSE(fs::exists(tmp / "new"));
  EXPECT_FALSE(made.held());
  fs::create_directories(tmp / "old");
  write(tmp / "old" / "notes.txt", "mine");
  RunFolder kept = RunFolder::claim(tmp / "old");
  kept.release_refused();
  EXPECT_EQ(read(tmp / "old" / "notes.txt"), "mine");
}

TEST(RunFolder, AFolderWithARunIsRefusedUnlessToldToResumeOrStartOver) {
  const testing::TempDir tmp("run_folder");
  const fs::path dir = tmp / "run";
  write(dir / "summary.json", "{}");
  write(dir / "recipe.yaml", "seed: 0\n");
  RunFolder folder = RunFolder::claim(dir);
  EXPECT_THAT(error_of([&] { folder.prepare({.existing = RunFolder::Existing::kRefuse}); }),
              HasSubstr("a run is already there (recipe.yaml, summary.json)"));
  // --autoresume of a finished run with nothing to resume: refused, nothing moved.
  EXPECT_THAT(error_of([&] { folder.prepare({.existing = RunFolder::Existing::kResume, .recipe_yaml = "seed: 0\n"}); }),
              HasSubstr("--autoresume has nothing to resume here: the folder holds a finished run"));
  EXPECT_TRUE(fs::exists(dir / "summary.json"));
  // --overwrite: moved aside, never deleted.
  std::FILE* quiet = std::fopen("/dev/null", "w");
  folder.prepare({.existing = RunFolder::Existing::kStartOver, .out = quiet});
  std::fclose(quiet);
  EXPECT_FALSE(fs::exists(dir / "summary.json"));
  const auto moved = asides(dir);
  ASSERT_EQ(moved.size(), 1U);
  EXPECT_EQ(read(moved[0] / "summary.json"), "{}");
}

TEST(RunFolder, AutoresumeStartsOverARunOfTheSameRecipeKilledBeforeItsFirstCheckpoint) {
  const testing::TempDir tmp("run_folder");
  const fs::path dir = tmp / "run";
  write(dir / "recipe.yaml", "seed: 0\n");
  write(dir / "metrics.jsonl", "{}\n");
  RunFolder folder = RunFolder::claim(dir);
  EXPECT_THAT(error_of([&] { folder.prepare({.existing = RunFolder::Existing::kResume, .recipe_yaml = "seed: 1\n"}); }),
              HasSubstr("the run of another recipe"));
  std::FILE* quiet = std::fopen("/dev/null", "w");
  folder.prepare({.existing = RunFolder::Existing::kResume, .recipe_yaml = "seed: 0\n", .out = quiet});
  std::fclose(quiet);
  EXPECT_FALSE(fs::exists(dir / "metrics.jsonl"));
  ASSERT_EQ(asides(dir).size(), 1U);
}

TEST(RunFolder, ItsFilesAreWrittenWhole) {
  const testing::TempDir tmp("run_folder");
  RunFolder folder = RunFolder::claim(tmp / "run");
  folder.write_recipe("seed: 3\n");
  folder.write_classes({"cat", "dog"});
  EXPECT_EQ(read(folder.files().recipe()), "seed: 3\n");
  EXPECT_EQ(read(folder.files().classes()), "cat\ndog\n");
}

TEST(RunFolder, ARunFolderInsideWhatTheRecipeReadsIsRefused) {
  const testing::TempDir tmp("run_folder");
  fs::create_directories(tmp / "images");
  EXPECT_THAT(error_of([&] { RunFolder::check_against_inputs(tmp / "images" / "run", {tmp.file("images")}); }),
              HasSubstr("the run folder is inside"));
  EXPECT_NO_THROW(RunFolder::check_against_inputs(tmp / "run", {tmp.file("images")}));
}

}  // namespace
}  // namespace baton
