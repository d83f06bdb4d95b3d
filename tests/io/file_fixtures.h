// What file_test.cpp and write_test.cpp share.
#pragma once

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

namespace baton::file_fixtures {

namespace fs = std::filesystem;

using testing::error_of;

class Files : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "inside");
    std::ofstream(dir_ / "inside" / "a.txt") << "hello";
    std::ofstream(dir_ / "outside.txt") << "secret";
  }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }
  testing::TempDir tmp_{"io"};
  fs::path dir_ = tmp_.path();
};

}  // namespace baton::file_fixtures
