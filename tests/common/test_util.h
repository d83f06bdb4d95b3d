// Helpers shared by baton's tests.
#pragma once

#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include <stdlib.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

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
    std::filesystem::remove_all(path_, ec);
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
