// ImageFolder: a folder of JPEG and PNG files in ImageNet's layout (one subfolder per class, classes
// in sorted order) or a CSV list of `path,label`, decoded and transformed on threads, batch by batch.
//
//   auto train = baton::ImageFolder::from_dir("/data/train", baton::ImageFolderOptions()
//                    .transforms(R"([{"random_resized_crop": {}}, "horizontal_flip"])"_json).workers(8));
//   baton::Batch b = train->get_epoch_batch(torch::arange(256), /*epoch=*/0);
//   // b.input: uint8 [256, 3, 224, 224], channels-last; finish_inputs() makes it normalised float.
//
// An example's random crop and flip come from (seed, epoch, index) only: a batch is the same for
// any number of workers, and a resumed run sees the batches an uninterrupted one would have.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/options.h"
#include "baton/data/dataset.h"
#include "baton/data/images.h"

namespace baton {
namespace image_detail {
class ImagePipeline;
}

enum class BadFiles { kError, kSkip };
BATON_ENUM_NAMES(BadFiles, {BadFiles::kError, "error"}, {BadFiles::kSkip, "skip"});

// The largest side an image is made at (image_size, a resize or a crop): one RGB image of 8192 x
// 8192 is 768 MiB as floats; a larger one would fail inside the allocator mid-run.
inline constexpr int64_t kMaxImageSide = 8192;

class ImageFolderOptions {
  // 1 (gray) or 3 (RGB).
  BATON_ARG(int, channels) = 3;
  // The side of the square images a batch holds.
  BATON_ARG(int64_t, image_size) = 224;
  // The transforms (ImageTransforms::parse): a list; empty or null resizes the image to image_size.
  BATON_ARG(nlohmann::json, transforms) = nlohmann::json::array();
  // Per channel, of pixels scaled to [0, 1]: finish_inputs gives (x / 255 - mean) / std. One value
  // stands for every channel. Default: ImageNet's, or 0.5 / 0.5 for one channel.
  BATON_ARG(std::vector<double>, mean);
  BATON_ARG(std::vector<double>, std);
  // Decode threads; 0: one a core.
  BATON_ARG(int, workers) = 0;
  // A file that is not a readable image (or is smaller than a crop): an error naming it, or skipped
  // (left out of the examples when its header shows it, replaced by the next example when only its
  // pixels do) and reported.
  BATON_ARG(BadFiles, bad_files) = BadFiles::kError;
  // Of the random crops and flips.
  BATON_ARG(uint64_t, seed) = 0;
  // Where the transforms were written, for messages ("data.train_transforms").
  BATON_ARG(std::string, where) = "transforms";
  // The evaluation pipeline, for images given later to the trained model (baton predict --inputs).
  BATON_ARG(nlohmann::json, eval_transforms) = nlohmann::json::array();
};

class ImageFolder : public Dataset {
 public:
  // ImageNet's layout: `dir`/CLASS/.../FILE.{jpg,jpeg,png} (other files are not examples). `classes`
  // empty: the subfolders, sorted; given (an evaluation set's, from its training set): those, and a
  // subfolder outside them is an error. Every file's header is read here: a file that is not an
  // image is an error (or skipped). Throws ImageError naming the folder or file.
  static std::shared_ptr<ImageFolder> from_dir(const std::string& dir, ImageFolderOptions options,
                                               std::vector<std::string> classes = {});
  // A CSV list: one `path,label` a line (paths relative to the list's folder, labels class indices
  // from 0; a first line `path,label` is a header). Throws ImageError naming the file and line.
  static std::shared_ptr<ImageFolder> from_list(const std::string& list, ImageFolderOptions options,
                                                std::vector<std::string> classes = {});
  // Image files to predict on (labels 0): `path` an image file, or a folder whose image files (at any
  // depth, sorted) are taken. Throws ImageError naming the path.
  static std::shared_ptr<ImageFolder> from_files(const std::string& path, ImageFolderOptions options,
                                                 std::vector<std::string> classes);
  ~ImageFolder() override;

  int64_t size() const override;
  // Epoch 0's batch.
  Batch get_batch(const at::Tensor& indices) const override;
  // uint8 inputs [N, C, H, W] (channels-last memory), int64 targets [N].
  Batch get_epoch_batch(const at::Tensor& indices, int64_t epoch) const override;
  at::Tensor finish_inputs(const at::Tensor& inputs) const override;
  std::vector<int64_t> input_shape() const override;
  int64_t num_classes() const override;
  std::vector<std::string> class_names() const override;

  // The class names, a label's index into them.
  const std::vector<std::string>& classes() const;
  const std::vector<std::string>& files() const;
  const std::vector<int64_t>& labels() const;
  // The files left out or replaced (bad_files: skip), with why: "x.jpg: not a JPEG or PNG file".
  std::vector<std::string> skipped() const;
  const ImageFolderOptions& options() const;

  // The pixels of example `index` at `epoch`, uint8 [H, W, C] written into `out`. Throws ImageError.
  void render(int64_t index, int64_t epoch, at::Tensor& out) const;

 private:
  ImageFolder(ImageFolderOptions options, std::vector<std::string> classes, std::vector<std::string> files,
              std::vector<int64_t> labels, const std::string& origin);
  void check_headers(const std::string& origin);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
