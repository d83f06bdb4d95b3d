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

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;

// A smooth picture with detail: gradients and a checker, uint8 [h, w, c].
at::Tensor picture(int64_t h, int64_t w, int64_t c, int64_t seed = 0) {
  const at::Tensor y = torch::arange(h, torch::kFloat).view({h, 1, 1});
  const at::Tensor x = torch::arange(w, torch::kFloat).view({1, w, 1});
  const at::Tensor ch = torch::arange(c, torch::kFloat).view({1, 1, c});
  const at::Tensor v = 128 + 60 * torch::sin((x + 3 * ch + static_cast<double>(seed)) / 9.0) +
                       50 * torch::cos((y - 2 * ch) / 13.0) + 10 * ((x.floor_divide(16) + y.floor_divide(16)) % 2);
  return v.clamp(0, 255).round().to(torch::kByte).contiguous();
}

std::string bytes_of(const std::filesystem::path& path) { return read_file(path.string()); }

// A JPEG cut in the middle of its entropy-coded data (after its headers: the start of scan, FF DA).
std::string truncated(const std::string& jpeg) {
  const size_t scan = jpeg.find("\xFF\xDA");
  return jpeg.substr(0, scan + (jpeg.size() - scan) / 2);
}

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

TEST(ImageTransforms, FoldIntoOnePlanDrawnFromSeedEpochAndIndex) {
  const auto train = ImageTransforms::parse(
      nlohmann::json::parse(R"([{"random_resized_crop": {"scale": [0.25, 1.0]}}, "horizontal_flip"])"), 64, "t");
  EXPECT_TRUE(train.random());
  for (int64_t index = 0; index < 50; ++index) {
    ExampleRng a(7, 2, index), b(7, 2, index);
    const ImagePlan pa = train.plan({300, 400}, a), pb = train.plan({300, 400}, b);
    EXPECT_EQ(pa.region.top, pb.region.top);
    EXPECT_EQ(pa.flip, pb.flip);
    EXPECT_EQ(pa.out, (ImageSize{64, 64}));
    EXPECT_GE(pa.region.top, 0);
    EXPECT_LE(pa.region.top + pa.region.height, 300);
    EXPECT_LE(pa.region.left + pa.region.width, 400);
    EXPECT_GE(pa.region.height * pa.region.width, 0.25 * 300 * 400 * 0.9);
  }
  ExampleRng e1(7, 1, 3), e2(7, 2, 3);
  EXPECT_NE(train.plan({300, 400}, e1).region.left, train.plan({300, 400}, e2).region.left);
  // resize 73 then center_crop 64 of a 300x400 image: the central 263x263 of the source.
  const auto eval = ImageTransforms::parse(nlohmann::json::parse(R"([{"resize": 73}, {"center_crop": 64}])"), 64, "e");
  EXPECT_FALSE(eval.random());
  ExampleRng r(0, 0, 0);
  const ImagePlan plan = eval.plan({300, 400}, r);
  EXPECT_NEAR(plan.region.height, 300.0 * 64 / 73, 1e-9);
  EXPECT_NEAR(plan.region.top, (73 - 64) / 2 * 300.0 / 73, 1.0);
  EXPECT_THAT(error_of([&] { eval.plan({50, 50}, r); }), HasSubstr(""));  // 73x73 then 64: fits
  const auto big = ImageTransforms::parse(nlohmann::json::parse(R"([{"center_crop": 64}])"), 64, "e");
  EXPECT_EQ(error_of([&] { big.plan({50, 80}, r); }), "an image of 80x50 is smaller than center_crop's 64x64");
  // Refusals name the step.
  EXPECT_THAT(error_of([] { ImageTransforms::parse(nlohmann::json::parse(R"(["rotate"])"), 64, "t"); }),
              HasSubstr("t[0]: unknown transform 'rotate'"));
  EXPECT_THAT(error_of([] { ImageTransforms::parse(nlohmann::json::parse(R"([{"resize": 64}])"), 64, "t"); }),
              HasSubstr("t: the pipeline must end at image_size (64x64): end it with a crop"));
  EXPECT_THAT(error_of([] {
                ImageTransforms::parse(nlohmann::json::parse(R"([{"random_resized_crop": {"scale": [0.5, 0.1]}}])"), 64,
                                       "t");
              }),
              HasSubstr("t[0].random_resized_crop.scale: expected [low, high]"));
  EXPECT_THAT(error_of([] { ImageTransforms::parse(nlohmann::json::parse(R"([{"center_crop": 32}])"), 64, "t"); }),
              HasSubstr("not 32x32"));
  EXPECT_THAT(
      error_of([] {
        ImageTransforms::parse(nlohmann::json::parse(R"([{"random_resized_crop": {"scal": [0.5, 1]}}])"), 64, "t");
      }),
      HasSubstr("unknown key 't[0].random_resized_crop.scal' (known in t[0].random_resized_crop: size, scale, ratio)"));
  EXPECT_THAT(error_of([] {
                ImageTransforms::parse(nlohmann::json::parse(R"([{"horizontal_flip": {"p": 2}}, {"center_crop": 64}])"),
                                       64, "t");
              }),
              HasSubstr("t[0].horizontal_flip.p: expected a probability from 0 to 1"));
}

// Two classes of PNGs and JPEGs: cat (3 files), dog (2 files, one in a subfolder).
void write_folder(const std::filesystem::path& root) {
  std::filesystem::create_directories(root / "cat");
  std::filesystem::create_directories(root / "dog" / "more");
  write_png((root / "cat" / "a.png").string(), picture(40, 60, 3, 1));
  write_jpeg((root / "cat" / "b.jpg").string(), picture(50, 45, 3, 2));
  write_jpeg((root / "cat" / "c.JPEG").string(), picture(80, 100, 3, 3));
  write_png((root / "dog" / "d.png").string(), picture(64, 64, 3, 4));
  write_jpeg((root / "dog" / "more" / "e.jpg").string(), picture(90, 70, 3, 5));
  std::ofstream(root / "dog" / "notes.txt") << "not an example";
}

TEST(ImageFolder, ReadsImageNetsLayoutIntoUint8ChannelsLastBatches) {
  TempDir dir("folder");
  write_folder(dir.path());
  auto options = ImageFolderOptions().image_size(32).transforms(
      nlohmann::json::parse(R"([{"random_resized_crop": {}}, "horizontal_flip"])"));
  auto data = ImageFolder::from_dir(dir.str(), options);
  EXPECT_EQ(data->classes(), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(data->size(), 5);
  EXPECT_EQ(data->labels(), (std::vector<int64_t>{0, 0, 0, 1, 1}));
  EXPECT_EQ(data->input_shape(), (std::vector<int64_t>{3, 32, 32}));
  const Batch b = data->get_epoch_batch(torch::tensor({4, 0, 3}), 0);
  EXPECT_EQ(b.input.sizes(), (std::vector<int64_t>{3, 3, 32, 32}));
  EXPECT_EQ(b.input.scalar_type(), torch::kByte);
  EXPECT_TRUE(b.input.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::equal(b.target, torch::tensor({1, 0, 1})));
  // The same batch for 1, 2 and 4 workers; another epoch draws other crops.
  for (int workers : {1, 2, 4}) {
    auto other = ImageFolder::from_dir(dir.str(), ImageFolderOptions(options).workers(workers));
    EXPECT_TRUE(torch::equal(other->get_epoch_batch(torch::tensor({4, 0, 3}), 0).input, b.input)) << workers;
  }
  EXPECT_FALSE(torch::equal(data->get_epoch_batch(torch::tensor({4, 0, 3}), 1).input, b.input));
  // Normalised on the device: (x / 255 - mean) / std, per channel.
  const at::Tensor f = data->finish_inputs(b.input);
  EXPECT_EQ(f.scalar_type(), torch::kFloat);
  const at::Tensor expected =
      (b.input.to(torch::kFloat) / 255 - torch::tensor({0.485, 0.456, 0.406}).view({1, 3, 1, 1})) /
      torch::tensor({0.229, 0.224, 0.225}).view({1, 3, 1, 1});
  EXPECT_TRUE(torch::allclose(f, expected, 1e-5, 1e-5));
  // A DataLoader hands the epoch to the data set and finishes the inputs.
  DataLoader loader(data, DataLoaderOptions().batch_size(5).seed(3));
  loader.start_epoch(1);
  const Batch first = *loader.next();
  EXPECT_EQ(first.input.scalar_type(), torch::kFloat);
  loader.set_position({1, 0, 3});
  EXPECT_TRUE(torch::equal(loader.next()->input, first.input));
}

TEST(ImageFolder, BadFolderFilesAndListsAreErrorsOrSkipped) {
  TempDir dir("folder");
  write_folder(dir / "train");
  const auto opts = ImageFolderOptions().image_size(16);
  EXPECT_THAT(error_of([&] { ImageFolder::from_dir((dir / "nothing").string(), opts); }),
              HasSubstr("nothing: nothing, not a folder of class folders"));
  std::filesystem::create_directories(dir / "train" / "empty");
  EXPECT_THAT(error_of([&] { ImageFolder::from_dir((dir / "train").string(), opts); }),
              HasSubstr("train/empty: a class folder with no .jpg, .jpeg or .png files"));
  std::filesystem::remove(dir / "train" / "empty");
  std::ofstream(dir / "train" / "cat" / "fake.jpg") << "not a jpeg";
  EXPECT_THAT(error_of([&] { ImageFolder::from_dir((dir / "train").string(), opts); }),
              HasSubstr("cat/fake.jpg: not a JPEG or PNG file"));
  auto skipping = ImageFolder::from_dir((dir / "train").string(), ImageFolderOptions(opts).bad_files(BadFiles::kSkip));
  EXPECT_EQ(skipping->size(), 5);
  ASSERT_EQ(skipping->skipped().size(), 1U);
  EXPECT_THAT(skipping->skipped()[0], HasSubstr("fake.jpg"));
  // A truncated JPEG: its header reads, its pixels do not.
  std::filesystem::remove(dir / "train" / "cat" / "fake.jpg");
  const std::string whole = bytes_of(dir / "train" / "cat" / "b.jpg");
  std::ofstream(dir / "train" / "cat" / "b.jpg", std::ios::binary) << truncated(whole);
  auto strict = ImageFolder::from_dir((dir / "train").string(), opts);
  EXPECT_THAT(error_of([&] { strict->get_batch(torch::arange(5)); }), HasSubstr("b.jpg: a truncated or corrupt JPEG"));
  auto lenient = ImageFolder::from_dir((dir / "train").string(), ImageFolderOptions(opts).bad_files(BadFiles::kSkip));
  EXPECT_EQ(lenient->get_batch(torch::arange(5)).input.size(0), 5);
  EXPECT_EQ(lenient->skipped().size(), 1U);
  // An evaluation folder with a class the training set lacks.
  std::filesystem::create_directories(dir / "val" / "bird");
  write_png((dir / "val" / "bird" / "x.png").string(), picture(20, 20, 3));
  EXPECT_THAT(error_of([&] {
                ImageFolder::from_dir((dir / "val").string(), opts, {"cat", "dog"});
              }),
              HasSubstr("val/bird: a class the training set does not have"));
  // CSV lists: paths relative to the list, a header, bad lines named by number.
  std::ofstream(dir / "list.csv") << "path,label\ntrain/cat/a.png,0\ntrain/dog/d.png, 1\n";
  auto listed = ImageFolder::from_list((dir / "list.csv").string(), opts);
  EXPECT_EQ(listed->size(), 2);
  EXPECT_EQ(listed->num_classes(), 2);
  std::ofstream(dir / "bad.csv") << "train/cat/a.png,0\ntrain/dog/d.png\n";
  EXPECT_THAT(error_of([&] { ImageFolder::from_list((dir / "bad.csv").string(), opts); }),
              HasSubstr("bad.csv:2: expected path,label"));
  std::ofstream(dir / "bad2.csv") << "train/cat/a.png,zero\n";
  EXPECT_THAT(error_of([&] { ImageFolder::from_list((dir / "bad2.csv").string(), opts); }),
              HasSubstr("bad2.csv:1: the label 'zero' is not a class index"));
  // An image smaller than the crop: found when the data set is built (before a run folder is made),
  // not at the batch that reads it; with bad_files: skip, left out.
  const auto cropping =
      ImageFolderOptions(opts).image_size(64).transforms(nlohmann::json::parse(R"([{"center_crop": 64}])"));
  EXPECT_THAT(error_of([&] { ImageFolder::from_dir((dir / "train").string(), cropping); }),
              HasSubstr("a.png: an image of 60x40 is smaller than center_crop's 64x64"));
  const auto too_small =
      ImageFolder::from_dir((dir / "train").string(), ImageFolderOptions(cropping).bad_files(BadFiles::kSkip));
  EXPECT_LT(too_small->size(), 5);
  EXPECT_THAT(too_small->skipped().front(), HasSubstr("is smaller than center_crop's 64x64"));
}

}  // namespace
}  // namespace baton
