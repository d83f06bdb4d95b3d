// Outputs (src/io/write.cpp): never one of the command's inputs, never over what is not a regular
// file; whole files written atomically.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "baton/io/file.h"
#include "baton/io/text.h"
#include "baton/io/write.h"
#include "common/test_util.h"
#include "io/file_fixtures.h"

namespace baton {
namespace {

using namespace file_fixtures;  // NOLINT(google-build-using-namespace)
namespace fs = std::filesystem;
using testing::error_of;
using ::testing::HasSubstr;

// One output path for every command that writes: never over one of the command's inputs (however
// named), never over what is not a regular file; a folder never where its files would be read.
TEST_F(Files, AnOutputIsNeverOneOfTheCommandsInputsNorWhatIsNotARegularFile) {
  const std::string in = at("inside/a.txt");
  fs::create_symlink(in, at("link.txt"));
  fs::create_hard_link(in, at("hard.txt"));
  for (const std::string& out : {in, at("link.txt"), at("hard.txt"), at("inside/../inside/a.txt")}) {
    EXPECT_THAT(error_of([&] {
                  check_output(out, "--out", {at("outside.txt"), in});
                }),
                ::testing::HasSubstr(": --out is " + in + ", an input of this command; write elsewhere"))
        << out;
  }
  EXPECT_NO_THROW(check_output(at("new.npy"), "--out", {in, ""}));
  EXPECT_NO_THROW(check_output(at("outside.txt"), "--out", {in}));  // replacing a file that is no input
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0600), 0);
  EXPECT_THAT(error_of([&] { check_output(at("fifo"), "--out", {}); }), ::testing::HasSubstr("a FIFO is there"));
  EXPECT_THAT(error_of([&] { check_output("/dev/full", "--out", {}); }),
              ::testing::HasSubstr("a character device is there"));
  EXPECT_THAT(error_of([&] { check_output("", "--out", {}); }), ::testing::HasSubstr("--out: no file named"));
  // Folders: not an input folder, not inside one, not holding one; not a file.
  EXPECT_THAT(error_of([&] { check_output_folder(at("inside"), "--out", {at("inside")}); }),
              ::testing::HasSubstr("inside: --out is " + at("inside")));
  EXPECT_THAT(error_of([&] { check_output_folder(at("inside/shards"), "--out", {at("inside")}); }),
              ::testing::HasSubstr("--out is inside " + at("inside")));
  EXPECT_THAT(error_of([&] { check_output_folder(dir_.string(), "--out", {in}); }),
              ::testing::HasSubstr("--out holds " + in));
  EXPECT_THAT(error_of([&] { check_output_folder(in, "--out", {}); }),
              ::testing::HasSubstr("a regular file is there, not a folder"));
  EXPECT_NO_THROW(check_output_folder(at("shards"), "--out", {in, at("outside.txt")}));
}

// A whole file replaces the old one, leaves no temporary beside it, and a write that cannot happen
// keeps what was there.
TEST_F(Files, AWholeFileReplacesTheOldOneAndAFailedWriteKeepsIt) {
  write_file_atomically(at("inside/a.txt"), "new bytes");
  EXPECT_EQ(read_file(at("inside/a.txt")), "new bytes");
  write_file_atomically(at("fresh.bin"), std::string("\0\1\2", 3));
  EXPECT_EQ(fs::file_size(at("fresh.bin")), 3U);
  for (const auto& entry : fs::directory_iterator(dir_ / "inside")) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
  EXPECT_THAT(error_of([&] { write_file_atomically(at("inside"), "x"); }), HasSubstr("a folder is there"));
  EXPECT_THAT(error_of([&] { write_file_atomically(at("missing/x.bin"), "x"); }),
              HasSubstr("cannot write in " + at("missing")));
  if (::geteuid() != 0) {  // root writes through permissions
    fs::permissions(dir_ / "inside", fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_THAT(error_of([&] { write_file_atomically(at("inside/a.txt"), "lost"); }), HasSubstr("cannot write in"));
    fs::permissions(dir_ / "inside", fs::perms::owner_all);
    EXPECT_EQ(read_file(at("inside/a.txt")), "new bytes");
  }
}

}  // namespace
}  // namespace baton
