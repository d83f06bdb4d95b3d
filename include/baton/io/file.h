// Reading and writing the files a user names, one way everywhere: only regular files are read
// (never a FIFO, a device such as /dev/zero, a socket or a folder), sizes are bounded, and a write
// never replaces something that is not a regular file.
//
//   std::string text = baton::read_file("recipe.yaml", {.what = "the recipe", .max_bytes = 4 << 20});
//   baton::check_write_target("model.pt", "--torchscript");   // refuses /dev/full, a FIFO, a folder
//
// Errors are FileError, one line that names the file: "x.yaml: not a regular file (a FIFO)".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace baton {

class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ReadOptions {
  std::string_view what = "the file";     // in messages: "x.yaml: the recipe is larger than 4 MiB"
  std::uint64_t max_bytes = 64ull << 20;  // Default: 64 MiB
  // When set, the file (after every link is followed) must lie inside this folder.
  std::string_view inside{};
};

// A file descriptor open for reading on a regular file; closed when destroyed.
class ReadableFile {
 public:
  // Opens without blocking (a FIFO never stalls the open), then refuses what is not a regular file,
  // is larger than max_bytes, or (with `inside`) resolves outside that folder. Throws FileError.
  ReadableFile(const std::string& path, const ReadOptions& options);
  ~ReadableFile();
  ReadableFile(const ReadableFile&) = delete;
  ReadableFile& operator=(const ReadableFile&) = delete;
  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }
  // Takes the descriptor (the caller closes it: gzdopen, say).
  int release();

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// The whole file. Throws FileError (the path, and what is wrong with it).
std::string read_file(const std::string& path, const ReadOptions& options = {});

// For a message about a relative path that names nothing: " (read from the current folder: it
// is /abs/path)", since recipes' and flags' relative paths are read from the current folder, not
// the recipe's; "" for an absolute path.
std::string where_relative(const std::string& path);

// What is at `path`, in a message's words: "a regular file", "a folder", "a FIFO", "a character
// device", "a block device", "a socket", "a link to nothing", "nothing".
std::string file_kind(const std::string& path);

// Refuses (FileError, naming `what`) to write at `path` when something other than a regular file is
// there: a device (/dev/full), a FIFO, a socket, a folder. Links are followed.
void check_write_target(const std::string& path, std::string_view what);

// True when `path` (its links followed) lies inside `folder` (its links followed): the same folder
// or below it.
bool resolves_inside(const std::string& path, const std::string& folder);

// A name that is one path component: not empty, no '/', not "." or "..", no NUL. For names a user
// gives that become files or folders (run_name, save_filename): refuse the rest.
bool is_plain_name(std::string_view name);

// An exclusive advisory lock (POSIX fcntl) on `path`, created when missing: held until the object
// is destroyed or the process ends, however it ends (kill -9 included), so it is never left stuck.
//
//   baton::FileLock lock("runs/x/.lock");
//   if (!lock.held()) ... lock.holder() is the pid that has it
class FileLock {
 public:
  explicit FileLock(const std::string& path);  // throws FileError when the file cannot be made
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool held() const;
  long holder() const;  // when !held(): the process holding it (0: unknown)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Removes `folder`'s temporary files and folders ".NAME.tmp.PID" whose process is gone (a write
// that a kill cut short); those of live processes are left alone. Returns how many were removed.
int remove_stale_temporaries(const std::string& folder);

// Removes `path` and, when it is a folder, everything under it (links are removed, never followed),
// as std::filesystem::remove_all does; returns how many entries went (0 when `path` was absent).
// It never calls std::filesystem::remove_all: a PyTorch wheel's libtorch.so carries a copy of it that
// jumps to address 0 when the dynamic linker finds it first (seen on a GPU machine's toolchain even
// with libstdc++.so.6 linked first). On an error `ec` says what; what was removed stays removed.
// Folders deeper than 512 levels are an error (ELOOP), never a stack overflow.
std::uintmax_t remove_tree(const std::string& path, std::error_code& ec);
std::uintmax_t remove_tree(const std::string& path);  // throws FileError

// "4 MiB", "512 KiB", "12 bytes": sizes in messages.
std::string human_bytes(std::uint64_t bytes);

}  // namespace baton
