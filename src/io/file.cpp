#include "baton/io/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <memory>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace baton {
namespace {

namespace fs = std::filesystem;

std::string kind_of_mode(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

[[noreturn]] void io_fail(const std::string& path, const std::string& why) { throw FileError(path + ": " + why); }

// The path the open descriptor really names (every link resolved, race-free: the kernel's answer
// for this descriptor, not a second lookup of the name).
std::string real_path_of(int fd) {
  char buffer[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), buffer, sizeof buffer - 1);
  if (n <= 0) return {};
  return std::string(buffer, static_cast<std::size_t>(n));
}

bool path_within(const std::string& path, const std::string& folder) {
  if (path.empty() || folder.empty()) return false;
  if (path == folder) return true;
  const std::string prefix = folder.back() == '/' ? folder : folder + "/";
  return path.rfind(prefix, 0) == 0;
}

}  // namespace

ReadableFile::ReadableFile(const std::string& path, const ReadOptions& options) {
  if (path.empty()) throw FileError(std::string(options.what) + ": no file named (an empty path)");
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd_ < 0) {
    const int err = errno;
    io_fail(path, std::string("cannot open ") + std::string(options.what) + " (" + std::strerror(err) + ")" +
                      (err == ENOENT ? where_relative(path) : std::string()));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string kind = kind_of_mode(st.st_mode);
    ::close(fd_);
    fd_ = -1;
    io_fail(path, kind + ", not a regular file; " + std::string(options.what) + " must be one");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
  if (!options.inside.empty()) {
    std::error_code ec;
    const std::string folder = fs::weakly_canonical(std::string(options.inside), ec).string();
    if (ec || !path_within(real_path_of(fd_), folder)) {
      ::close(fd_);
      fd_ = -1;
      io_fail(path, "resolves outside " + std::string(options.inside) + "; only files inside it are read");
    }
  }
  if (size_ > options.max_bytes) {
    ::close(fd_);
    fd_ = -1;
    io_fail(path, std::string(options.what) + " is " + human_bytes(size_) + ", more than the " +
                      human_bytes(options.max_bytes) + " allowed");
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
}

ReadableFile::~ReadableFile() {
  if (fd_ >= 0) ::close(fd_);
}

int ReadableFile::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

std::string read_file(const std::string& path, const ReadOptions& options) {
  ReadableFile file(path, options);
  std::string out;
  out.resize(static_cast<std::size_t>(file.size()));
  std::size_t have = 0;
  // Read to the end, though never past the bound: a file that grows while it is read stops there.
  while (true) {
    if (have == out.size()) {
      // All the bytes fstat counted are in: one byte more says whether the file grew meanwhile,
      // without growing (and zeroing) the buffer for the usual file that did not.
      char probe;
      ssize_t more = 0;
      do {
        more = ::read(file.fd(), &probe, 1);
      } while (more < 0 && errno == EINTR);
      if (more < 0) {
        const int err = errno;
        io_fail(path, std::string("cannot read ") + std::string(options.what) + " (" + std::strerror(err) + ")");
      }
      if (more == 0) break;
      if (out.size() >= options.max_bytes) {
        io_fail(path, std::string(options.what) + " grew past the " + human_bytes(options.max_bytes) + " allowed");
      }
      out.resize(std::min<std::uint64_t>(options.max_bytes, std::max<std::size_t>(out.size() * 2, 4096)));
      out[have++] = probe;
      continue;
    }
    const ssize_t n = ::read(file.fd(), out.data() + have, out.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      io_fail(path, std::string("cannot read ") + std::string(options.what) + " (" + std::strerror(err) + ")");
    }
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  out.resize(have);
  return out;
}

std::string where_relative(const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return {};
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  if (ec) return {};
  return " (read from the current folder: it is " + absolute.lexically_normal().string() + ")";
}

std::string file_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return kind_of_mode(st.st_mode);
  if (::lstat(path.c_str(), &st) == 0) return "a link to nothing";
  return "nothing";
}

void check_write_target(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (::lstat(path.c_str(), &st) == 0) {
      io_fail(path, std::string(what) + ": a link to nothing is there; remove it or write elsewhere");
    }
    return;  // nothing there: it will be created
  }
  if (!S_ISREG(st.st_mode)) {
    io_fail(path, std::string(what) + ": " + kind_of_mode(st.st_mode) +
                      " is there, not a regular file; baton writes only files (give a file's path)");
  }
}

bool resolves_inside(const std::string& path, const std::string& folder) {
  std::error_code ec;
  const std::string p = fs::weakly_canonical(path, ec).string();
  if (ec) return false;
  const std::string f = fs::weakly_canonical(folder, ec).string();
  if (ec) return false;
  return path_within(p, f);
}

bool is_plain_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

struct FileLock::Impl {
  int fd_ = -1;
  bool held_ = false;
  long holder_ = 0;
};

bool FileLock::held() const { return impl_->held_; }
long FileLock::holder() const { return impl_->holder_; }

FileLock::FileLock(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (impl_->fd_ < 0) {
    const int err = errno;
    io_fail(path, std::string("cannot make the lock file (") + std::strerror(err) + ")");
  }
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (::fcntl(impl_->fd_, F_SETLK, &lock) == 0) {
    impl_->held_ = true;
    return;
  }
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  if (::fcntl(impl_->fd_, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK) impl_->holder_ = probe.l_pid;
}

FileLock::~FileLock() {
  if (impl_->fd_ >= 0) ::close(impl_->fd_);  // closing releases the lock
}

namespace {

constexpr int kMaxTreeDepth = 512;

// Removes what `dirfd` names `name` (a folder with its contents); counts into `removed`.
bool remove_entry_at(int dirfd, const char* name, int depth, std::uintmax_t& removed, std::error_code& ec) {
  if (::unlinkat(dirfd, name, 0) == 0) {
    ++removed;
    return true;
  }
  if (errno != EISDIR && errno != EPERM) {
    if (errno == ENOENT) return true;
    ec.assign(errno, std::generic_category());
    return false;
  }
  if (depth >= kMaxTreeDepth) {
    ec = std::make_error_code(std::errc::too_many_symbolic_link_levels);
    return false;
  }
  const int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    ec.assign(errno, std::generic_category());
    return false;
  }
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ec.assign(errno, std::generic_category());
    ::close(fd);
    return false;
  }
  bool ok = true;
  errno = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
    if (!remove_entry_at(::dirfd(dir), entry->d_name, depth + 1, removed, ec)) {
      ok = false;
      break;
    }
  }
  ::closedir(dir);
  if (!ok) return false;
  if (::unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
    ec.assign(errno, std::generic_category());
    return false;
  }
  ++removed;
  return true;
}

}  // namespace

std::uintmax_t remove_tree(const std::string& path, std::error_code& ec) {
  ec.clear();
  std::uintmax_t removed = 0;
  if (path.empty()) return 0;
  remove_entry_at(AT_FDCWD, path.c_str(), 0, removed, ec);
  return removed;
}

std::uintmax_t remove_tree(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t removed = remove_tree(path, ec);
  if (ec) io_fail(path, "could not remove it: " + ec.message());
  return removed;
}

int remove_stale_temporaries(const std::string& folder) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    const auto tmp = name.rfind(".tmp.");
    if (name.empty() || name.front() != '.' || tmp == std::string::npos) continue;
    const std::string pid_text = name.substr(tmp + 5);
    if (pid_text.empty() || pid_text.size() > 10 || pid_text.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const long pid = std::stol(pid_text);
    if (pid == ::getpid() || (pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM))) continue;
    const auto status = entry.symlink_status(ec);
    if (fs::is_directory(status)) {  // a folder staged for a rename (baton tokenize's)
      if (remove_tree(entry.path().string(), ec) > 0) ++removed;
      continue;
    }
    if (!fs::is_regular_file(status) && !fs::is_symlink(status)) continue;
    if (fs::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (1ull << 30)) {  // "7.5 GiB"
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
    return text;
  }
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1ull << 10) && bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  if (bytes >= (1ull << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace baton
