// What tar_scanner_test.cpp and webdataset_test.cpp share.
#pragma once

#include "baton/data/webdataset.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/data/dataloader.h"
#include "baton/data/images.h"
#include "baton/io/file.h"
#include "baton/io/url.h"
#include "common/scripted_server.h"
#include "common/test_util.h"
#include "fuzz/tar_stream.h"

namespace baton::webdataset_fixtures {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::write_file;
using Members = std::vector<std::pair<std::string, std::string>>;

// A tar header alone: `name` of `type` ('0' a file, '5' a folder, 'L' a GNU long name) claiming
// `size` bytes (octal, as tar writes sizes up to 8 GiB).
inline std::string tar_header(const std::string& name, char type, uint64_t size) {
  std::string h(512, '\0');
  std::memcpy(h.data(), name.data(), std::min<size_t>(name.size(), 99));
  std::snprintf(&h[100], 8, "%07o", 0644);
  std::snprintf(&h[124], 12, "%011llo", static_cast<unsigned long long>(size));
  h[156] = type;
  std::memcpy(&h[257],
              "ustar\0"
              "00",
              8);
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  std::snprintf(&h[148], 8, "%06o", sum);
  return h;
}

}  // namespace baton::webdataset_fixtures
