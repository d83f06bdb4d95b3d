// What image_codec_test.cpp and image_folder_test.cpp share.
#pragma once

#include "baton/data/images.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <png.h>
#include <torch/torch.h>

#include "baton/data/dataloader.h"
#include "baton/data/image_folder.h"
#include "baton/io/file.h"
#include "common/test_util.h"

namespace baton::images_fixtures {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;

// A smooth picture with detail: gradients and a checker, uint8 [h, w, c].
inline at::Tensor picture(int64_t h, int64_t w, int64_t c, int64_t seed = 0) {
  const at::Tensor y = torch::arange(h, torch::kFloat).view({h, 1, 1});
  const at::Tensor x = torch::arange(w, torch::kFloat).view({1, w, 1});
  const at::Tensor ch = torch::arange(c, torch::kFloat).view({1, 1, c});
  const at::Tensor v = 128 + 60 * torch::sin((x + 3 * ch + static_cast<double>(seed)) / 9.0) +
                       50 * torch::cos((y - 2 * ch) / 13.0) + 10 * ((x.floor_divide(16) + y.floor_divide(16)) % 2);
  return v.clamp(0, 255).round().to(torch::kByte).contiguous();
}

inline std::string bytes_of(const std::filesystem::path& path) { return read_file(path.string()); }

// A JPEG cut in the middle of its entropy-coded data (after its headers: the start of scan, FF DA).
std::string truncated(const std::string& jpeg) {
  const size_t scan = jpeg.find("\xFF\xDA");
  return jpeg.substr(0, scan + (jpeg.size() - scan) / 2);
}

}  // namespace baton::images_fixtures
