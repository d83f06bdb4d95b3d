// Helpers shared by baton's tests.
#pragma once

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include "baton/io/file.h"

namespace baton::testing {

// The message of the exception `f` throws, or "no error".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

// The bytes of the file at `path` ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Writes `text` as the file at `path` (made or replaced).
inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Calls `f(name, contents)` for every file of tests/fuzz/corpus/<fuzzer>; returns how many.
// REQUIRES: BATON_SOURCE_DIR defined (tests/CMakeLists.txt does).
inline int for_each_corpus_input(const std::string& fuzzer,
                                 const std::function<void(const std::string&, const std::string&)>& f) {
  int inputs = 0;
  const std::filesystem::path dir = std::filesystem::path(BATON_SOURCE_DIR) / "tests/fuzz/corpus" / fuzzer;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    f(entry.path().filename().string(), read_file(entry.path()));
    ++inputs;
  }
  return inputs;
}

// A new empty folder under the system's temporary folder (baton_<name>_XXXXXX, made by mkdtemp, so
// tests that run at once never share one), removed with everything in it when the TempDir goes.
class TempDir {
 public:
  explicit TempDir(const std::string& name = "test") {
    std::string pattern = (std::filesystem::temp_directory_path() / ("baton_" + name + "_XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern + " failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    baton::remove_tree(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  std::string str() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Runs `body(i)` for i = 0..n-1, each in a forked process of its own, all at once; returns each
// one's exit code in order (0: body returned; 1: it threw, and said what on stderr; 128+N: killed by
// signal N). For tests of what several processes do to one file, database or queue.
inline std::vector<int> run_in_processes(int n, const std::function<void(int)>& body) {
  std::vector<pid_t> children;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int code = 0;
      try {
        body(i);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "process %d: %s\n", i, e.what());
        code = 1;
      }
      std::fflush(nullptr);
      ::_exit(code);
    }
    children.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

// Captures what spdlog prints while alive.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("captured", sink));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace baton::testing
