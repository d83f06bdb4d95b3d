// The files a user names: what is not a regular file is refused at once (a FIFO never stalls, a
// device is never read forever), sizes are bounded, links out of a folder are not followed when a
// folder is given, a write never lands on a device, FIFO or folder; the run directory lock.
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

TEST_F(Files, ReadsARegularFileWhole) { EXPECT_EQ(read_file(at("inside/a.txt")), "hello"); }

TEST_F(Files, RemoveTreeRemovesAFolderWholeAndNeverFollowsALink) {
  fs::create_directories(at("tree/a/b/c"));
  testing::write_file(at("tree/a/b/c/f.txt"), "x");
  testing::write_file(at("tree/g.txt"), "y");
  testing::write_file(at("kept.txt"), "z");
  fs::create_symlink(at("inside"), at("tree/a/link"));       // a link to a folder outside the tree
  fs::create_symlink(at("kept.txt"), at("tree/file_link"));  // a link to a file outside it
  EXPECT_EQ(remove_tree(at("tree")), 8u);                    // tree, a, b, c, f.txt, g.txt and the two links
  EXPECT_FALSE(fs::exists(at("tree")));
  EXPECT_TRUE(fs::exists(at("inside/a.txt")));
  EXPECT_TRUE(fs::exists(at("kept.txt")));
  EXPECT_EQ(remove_tree(at("tree")), 0u);      // absent: nothing to do, no error
  EXPECT_EQ(remove_tree(at("kept.txt")), 1u);  // a file alone
  std::error_code ec;
  EXPECT_EQ(remove_tree("", ec), 0u);
  EXPECT_FALSE(ec);
}

TEST_F(Files, RemoveTreeRefusesAFolderTooDeepAndSaysWhat) {
  fs::path deep = at("deep");
  for (int i = 0; i < 520; ++i) deep /= "d";
  std::error_code ec;
  fs::create_directories(deep, ec);
  if (ec) GTEST_SKIP() << "could not make 520 nested folders here: " << ec.message();
  EXPECT_THAT(error_of([&] { remove_tree(at("deep")); }), ::testing::HasSubstr("deep: could not remove it"));
  EXPECT_TRUE(fs::exists(deep));
  fs::path half = at("deep");  // split in two, each half goes
  for (int i = 0; i < 260; ++i) half /= "d";
  fs::rename(half, at("half"));
  EXPECT_EQ(remove_tree(at("half")), 261u);
  EXPECT_EQ(remove_tree(at("deep")), 260u);
}

TEST_F(Files, AFifoIsRefusedAtOnceNotWaitedOn) {
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  const std::string why = error_of([&] { read_file(at("fifo"), {.what = "the recipe"}); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(why, at("fifo") + ": a FIFO, not a regular file; the recipe must be one");
}

TEST_F(Files, DevicesFoldersAndMissingFilesAreRefusedNamingThem) {
  EXPECT_EQ(error_of([] { read_file("/dev/zero"); }),
            "/dev/zero: a character device, not a regular file; the file must be one");
  EXPECT_EQ(error_of([&] { read_file(at("inside")); }),
            at("inside") + ": a folder, not a regular file; the file must be one");
  EXPECT_EQ(error_of([&] { read_file(at("none")); }),
            at("none") + ": cannot open the file (No such file or directory)");
}

TEST_F(Files, SizesAreBounded) {
  std::ofstream(at("big")) << std::string(5000, 'x');
  EXPECT_EQ(error_of([&] { read_file(at("big"), {.what = "the space", .max_bytes = 4096}); }),
            at("big") + ": the space is 5000 bytes, more than the 4 KiB allowed");
  EXPECT_EQ(read_file(at("big"), {.max_bytes = 5000}).size(), 5000U);
}

// A file whose size fstat does not know (a /proc file says 0) is read to its end, and a bound still
// holds when the bytes run past it.
TEST_F(Files, AFileLongerThanItsStatSizeIsReadWholeAndBounded) {
  const std::string status = read_file("/proc/self/status");
  EXPECT_EQ(status.rfind("Name:", 0), 0u);
  EXPECT_NE(status.find("VmRSS:"), std::string::npos);
  EXPECT_THAT(error_of([] { read_file("/proc/self/status", {.what = "the status", .max_bytes = 16}); }),
              ::testing::HasSubstr("the status grew past the 16 bytes allowed"));
}

TEST_F(Files, LinksAreFollowedOnlyInsideTheFolderGiven) {
  fs::create_symlink(dir_ / "inside" / "a.txt", dir_ / "inside" / "link_in");
  fs::create_symlink(dir_ / "outside.txt", dir_ / "inside" / "link_out");
  fs::create_symlink("/etc/passwd", dir_ / "inside" / "passwd");
  const std::string inside = at("inside");
  EXPECT_EQ(read_file(at("inside/link_in"), {.inside = inside}), "hello");
  EXPECT_EQ(error_of([&] { read_file(at("inside/link_out"), {.inside = inside}); }),
            at("inside/link_out") + ": resolves outside " + inside + "; only files inside it are read");
  EXPECT_NE(error_of([&] { read_file(at("inside/passwd"), {.inside = inside}); }), "no error");
  EXPECT_EQ(read_file(at("inside/link_out")), "secret");  // without a folder, a link is the user's to follow
  EXPECT_TRUE(resolves_inside(at("inside/link_in"), inside));
  EXPECT_FALSE(resolves_inside(at("inside/link_out"), inside));
  EXPECT_FALSE(resolves_inside(at("inside/../outside.txt"), inside));
}

TEST_F(Files, WritesAreRefusedOverWhatIsNotARegularFile) {
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0644), 0);
  EXPECT_EQ(error_of([] { check_write_target("/dev/full", "--torchscript"); }),
            "/dev/full: --torchscript: a character device is there, not a regular file; baton writes only files "
            "(give a file's path)");
  EXPECT_NE(error_of([&] { check_write_target(at("fifo"), "--out"); }), "no error");
  EXPECT_NE(error_of([&] { check_write_target(at("inside"), "--out"); }), "no error");
  fs::create_symlink(dir_ / "gone", dir_ / "dangling");
  EXPECT_NE(error_of([&] { check_write_target(at("dangling"), "--out"); }), "no error");
  EXPECT_EQ(error_of([&] { check_write_target(at("inside/a.txt"), "--out"); }), "no error");
  EXPECT_EQ(error_of([&] { check_write_target(at("new.pt"), "--out"); }), "no error");
}

TEST(FileNames, APlainNameIsOneComponent) {
  EXPECT_TRUE(is_plain_name("run-1"));
  EXPECT_TRUE(is_plain_name("..x"));
  for (const char* bad : {"", ".", "..", "../../x", "a/b", "/abs"}) EXPECT_FALSE(is_plain_name(bad)) << bad;
}

TEST_F(Files, ALockIsHeldByOneProcessAndNamesItsHolder) {
  const std::string path = at(".lock");
  auto first = std::make_unique<FileLock>(path);
  ASSERT_TRUE(first->held());
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {  // another process: refused, told who holds it
    FileLock second(path);
    const long answer[2] = {second.held() ? 1L : 0L, second.holder()};
    [[maybe_unused]] auto n = ::write(pipe_fds[1], answer, sizeof answer);
    ::_exit(0);
  }
  long answer[2] = {-1, -1};
  ASSERT_EQ(::read(pipe_fds[0], answer, sizeof answer), static_cast<ssize_t>(sizeof answer));
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(answer[0], 0);
  EXPECT_EQ(answer[1], ::getpid());
  first.reset();  // released: the next one gets it
  EXPECT_TRUE(FileLock(path).held());
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST_F(Files, TemporariesOfProcessesThatAreGoneAreRemoved) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // a pid no process has now
  const std::string gone = ".ep1-ba5.ckpt.tmp." + std::to_string(child);
  const std::string mine = ".ep1-ba6.ckpt.tmp." + std::to_string(::getpid());
  for (const auto& name : {gone, mine, std::string(".hidden"), std::string("ep1.ckpt")})
    std::ofstream(dir_ / name) << "x";
  EXPECT_EQ(remove_stale_temporaries(dir_.string()), 1);
  EXPECT_FALSE(fs::exists(dir_ / gone));
  for (const auto& name : {mine, std::string(".hidden"), std::string("ep1.ckpt")}) EXPECT_TRUE(fs::exists(dir_ / name));
  // A folder staged for a rename (baton tokenize's) by a process that is gone: removed whole.
  fs::create_directories(dir_ / (".shards.tmp." + std::to_string(child)) / "inner");
  EXPECT_EQ(remove_stale_temporaries(dir_.string()), 1);
  EXPECT_FALSE(fs::exists(dir_ / (".shards.tmp." + std::to_string(child))));
}

}  // namespace
}  // namespace baton
