// Image decoding (src/data/image_codec.cpp): PNG exactly, JPEG closely, regions at a DCT scale,
// palettes and gray with alpha as PIL writes them, bad files named in one line.
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
#include "data/images_fixtures.h"

namespace baton {
namespace {

using namespace images_fixtures;  // NOLINT(google-build-using-namespace)

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;

double mean_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(torch::kFloat) - b.to(torch::kFloat)).abs().mean().item<double>();
}

TEST(Images, PngRoundTripsExactlyAndJpegClosely) {
  TempDir dir("images");
  for (int64_t c : {1, 3}) {
    const at::Tensor p = picture(37, 53, c);
    const auto png = dir / ("p" + std::to_string(c) + ".png");
    const auto jpg = dir / ("p" + std::to_string(c) + ".jpg");
    write_png(png.string(), p);
    write_jpeg(jpg.string(), p, 95);
    EXPECT_EQ(image_size(bytes_of(png), "p.png"), (ImageSize{37, 53}));
    EXPECT_EQ(image_size(bytes_of(jpg), "p.jpg"), (ImageSize{37, 53}));
    EXPECT_TRUE(torch::equal(decode_image(bytes_of(png), "p.png", static_cast<int>(c)), p));
    const at::Tensor j = decode_image(bytes_of(jpg), "p.jpg", static_cast<int>(c));
    ASSERT_EQ(j.sizes(), p.sizes());
    EXPECT_LT(mean_abs_diff(j, p), 3.0);
  }
  // Gray files as RGB and RGB files as gray.
  EXPECT_EQ(decode_image(bytes_of(dir / "p1.png"), "p1.png", 3).sizes(), (std::vector<int64_t>{37, 53, 3}));
  EXPECT_EQ(decode_image(bytes_of(dir / "p3.jpg"), "p3.jpg", 1).sizes(), (std::vector<int64_t>{37, 53, 1}));
}

TEST(Images, ARegionDecodedAtADctScaleMatchesTheFullDecodeResized) {
  TempDir dir("images");
  const at::Tensor p = picture(375, 500, 3);
  write_jpeg((dir / "big.jpg").string(), p, 95);
  const std::string bytes = bytes_of(dir / "big.jpg");
  const at::Tensor full = decode_image(bytes, "big.jpg", 3);
  // The region [64, 64 + 256) x [96, 96 + 256) down to 64x64: decoded at 1/4 scale.
  ImagePlan plan{{64, 96, 256, 256}, {64, 64}, false};
  at::Tensor out = at::empty({64, 64, 3}, at::kByte);
  render_image(bytes, "big.jpg", 3, plan, out);
  const at::Tensor crop = full.slice(0, 64, 320).slice(1, 96, 352).permute({2, 0, 1}).unsqueeze(0).to(torch::kFloat);
  const at::Tensor expected = torch::nn::functional::interpolate(
      crop, torch::nn::functional::InterpolateFuncOptions().size(std::vector<int64_t>{64, 64}).mode(torch::kArea));
  EXPECT_LT(mean_abs_diff(out, expected.squeeze(0).permute({1, 2, 0})), 3.0);
  // Flipped, the same pixels mirrored.
  plan.flip = true;
  at::Tensor mirrored = at::empty({64, 64, 3}, at::kByte);
  render_image(bytes, "big.jpg", 3, plan, mirrored);
  EXPECT_TRUE(torch::equal(mirrored, out.flip({1})));
  // At scale 1 with no resampling, the full decode's pixels (chroma upsampling at the crop's iMCU
  // edge differs by at most 2 in a few pixels, as libjpeg-turbo's partial decoding does).
  ImagePlan same{{10, 20, 30, 40}, {30, 40}, false};
  at::Tensor exact = at::empty({30, 40, 3}, at::kByte);
  render_image(bytes, "big.jpg", 3, same, exact);
  const at::Tensor diff = (exact.to(torch::kInt) - full.slice(0, 10, 40).slice(1, 20, 60).to(torch::kInt)).abs();
  EXPECT_LE(diff.max().item<int>(), 2);
  EXPECT_LT(diff.to(torch::kFloat).mean().item<float>(), 0.05);
}

TEST(Images, BadFilesAreOneLineErrorsNamingTheFile) {
  TempDir dir("images");
  const at::Tensor p = picture(40, 40, 3);
  write_jpeg((dir / "ok.jpg").string(), p);
  const std::string jpeg = bytes_of(dir / "ok.jpg");
  EXPECT_EQ(error_of([] { image_size("hello", "a.jpg"); }), "a.jpg: not a JPEG or PNG file");
  EXPECT_EQ(error_of([] { image_size("", "a.jpg"); }), "a.jpg: an empty file, not an image");
  EXPECT_THAT(error_of([&] { decode_image(truncated(jpeg), "cut.jpg", 3); }),
              HasSubstr("cut.jpg: a truncated or corrupt JPEG"));
  EXPECT_THAT(error_of([&] { decode_image(jpeg.substr(0, 40), "head.jpg", 3); }), HasSubstr("head.jpg: "));
  // 16-bit and palette PNGs, written with libpng.
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = 4, image.height = 4, image.format = PNG_FORMAT_LINEAR_Y;
  std::vector<uint16_t> deep(16, 30000);
  ASSERT_TRUE(png_image_write_to_file(&image, (dir / "deep.png").c_str(), 0, deep.data(), 0, nullptr));
  EXPECT_THAT(error_of([&] { decode_image(bytes_of(dir / "deep.png"), "deep.png", 3); }),
              HasSubstr("deep.png: a PNG with 16-bit pixels"));
  // An end-of-image marker in the middle of the scan: libjpeg fills the rest with gray and warns.
  const size_t scan = jpeg.find("\xFF\xDA");
  const std::string early_end = jpeg.substr(0, scan + (jpeg.size() - scan) / 2) + "\xFF\xD9";
  EXPECT_THAT(error_of([&] { decode_image(early_end, "eoi.jpg", 3); }),
              HasSubstr("eoi.jpg: a truncated or corrupt JPEG"));
  EXPECT_THAT(error_of([&] { read_image_file((dir / "none.jpg").string()); }), HasSubstr("none.jpg"));
  EXPECT_THAT(error_of([&] { read_image_file(dir.str()); }), HasSubstr("not a regular file"));
}

TEST(Images, PalettePngsAndGrayWithAlphaAsPilWritesThemDecode) {
  const TempDir dir("png_kinds");
  png_image palette{};
  palette.version = PNG_IMAGE_VERSION;
  palette.width = 4, palette.height = 2, palette.format = PNG_FORMAT_RGBA_COLORMAP, palette.colormap_entries = 2;
  std::vector<uint8_t> indices = {0, 1, 1, 0, 1, 1, 1, 1};
  std::vector<uint8_t> colours = {10, 20, 30, 0, 200, 100, 50, 255};  // the first transparent (PIL's mode P + tRNS)
  ASSERT_TRUE(png_image_write_to_file(&palette, (dir / "pal.png").c_str(), 0, indices.data(), 0, colours.data()));
  const at::Tensor rgb = decode_image(bytes_of(dir / "pal.png"), "pal.png", 3);
  ASSERT_EQ(rgb.sizes(), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(rgb[0][1][0].item<int>(), 200);  // index 1: its colour, alpha dropped as PIL's convert('RGB')
  EXPECT_EQ(rgb[0][1][2].item<int>(), 50);
  EXPECT_EQ(rgb[0][0][0].item<int>(), 10);  // index 0, transparent: its colour all the same
  png_image gray_alpha{};
  gray_alpha.version = PNG_IMAGE_VERSION;
  gray_alpha.width = 2, gray_alpha.height = 1, gray_alpha.format = PNG_FORMAT_GA;
  std::vector<uint8_t> ga = {90, 255, 180, 128};  // (gray, alpha) pairs: PIL's mode LA
  ASSERT_TRUE(png_image_write_to_file(&gray_alpha, (dir / "la.png").c_str(), 0, ga.data(), 0, nullptr));
  const at::Tensor gray = decode_image(bytes_of(dir / "la.png"), "la.png", 1);
  ASSERT_EQ(gray.sizes(), (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(gray[0][0][0].item<int>(), 90);
  EXPECT_EQ(decode_image(bytes_of(dir / "la.png"), "la.png", 3).sizes(), (std::vector<int64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace baton
