#include "baton/io/write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "baton/io/file.h"

namespace baton {
namespace {

// A write that fails on the way (a full disk, a read-only folder) is a failed run, not bad input.
[[noreturn]] void write_failed(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

void fsync_folder(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

[[noreturn]] void is_input(const std::string& path, std::string_view what, const std::string& input, const char* how) {
  std::string why = path;
  why.append(": ").append(what).append(how).append(input);
  throw FileError(why.append(", an input of this command; write elsewhere (nothing was written)"));
}

}  // namespace

void check_output(const std::string& path, std::string_view what, const std::vector<std::string>& inputs) {
  if (path.empty()) throw FileError(std::string(what) + ": no file named (an empty path)");
  check_write_target(path, what);
  const std::filesystem::path target(path);
  const std::string folder = target.has_parent_path() ? target.parent_path().string() : std::string(".");
  if (const std::string kind = file_kind(folder); kind != "a folder") {
    throw FileError(path + ": " + std::string(what) + ": cannot write here: its folder " + folder +
                    (kind == "nothing" ? " does not exist" : " is " + kind + ", not a folder") +
                    where_relative(folder) + " (make it first, or write elsewhere)");
  }
  for (const std::string& input : inputs) {
    if (!input.empty() && (same_file(path, input) || resolves_inside(input, path))) is_input(path, what, input, " is ");
  }
}

void check_output_folder(const std::string& path, std::string_view what, const std::vector<std::string>& inputs) {
  if (path.empty()) throw FileError(std::string(what) + ": no folder named (an empty path)");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    throw FileError(path + ": " + std::string(what) + ": " + file_kind(path) + " is there, not a folder");
  }
  for (const std::string& input : inputs) {
    if (input.empty()) continue;
    if (same_file(path, input) || resolves_inside(path, input)) {
      is_input(path, what, input, resolves_inside(input, path) || same_file(path, input) ? " is " : " is inside ");
    }
    if (resolves_inside(input, path)) is_input(path, what, input, " holds ");
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  write_file_atomically(path, std::vector<std::string_view>{bytes});
}

void write_file_atomically(const std::string& path, const std::vector<std::string_view>& pieces) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  check_write_target(path, "cannot write");  // FileError: a device, a FIFO, a folder there
  const std::string tmp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  ::unlink(tmp.c_str());  // one this process left (a failed write); never followed if it is a link
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) write_failed(path, std::string("cannot write in ") + dir.string() + " (" + std::strerror(errno) + ")");
  for (const std::string_view bytes : pieces) {
    std::size_t written = 0;
    while (written < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
      if (n < 0) {
        if (errno == EINTR) continue;
        const std::string why = std::strerror(errno);
        ::close(fd);
        ::unlink(tmp.c_str());
        write_failed(path, "write failed (" + why + "); the file there before is intact");
      }
      written += static_cast<std::size_t>(n);
    }
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    write_failed(path,
                 std::string("cannot flush to disk (") + std::strerror(errno) + "); the file there before is intact");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    write_failed(path, "cannot rename into place (" + why + ")");
  }
  fsync_folder(dir.string());
}

}  // namespace baton
