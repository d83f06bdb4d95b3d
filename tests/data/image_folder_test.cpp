// Image folders (src/data/image_folder.cpp): ImageNet's layout read into uint8 channels-last
// batches; bad folders, files and lists are errors or skipped.
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
