// Images: JPEG (libjpeg-turbo) and PNG (libpng) files decoded to uint8 pixels, and the geometric
// transforms of an image pipeline (random_resized_crop, resize, center_crop, horizontal_flip) folded
// into one plan per example: which region of the file to decode, at which DCT scale, and the size
// it is resampled to.
//
//   const std::string bytes = read_image_file("cat.jpg");
//   ImageTransforms t = ImageTransforms::parse(R"([{"random_resized_crop": {}}, "horizontal_flip"])"_json, 224);
//   ImagePlan plan = t.plan(image_size(bytes, "cat.jpg"), example_rng(seed, epoch, index));
//   at::Tensor pixels = render_image(bytes, "cat.jpg", 3, plan);  // uint8 [224, 224, 3]
//
// Pixels are uint8 [height, width, channels] (rows contiguous: channels last), channels 1 (gray) or
// 3 (RGB). Every error names the file: ImageError("cat.jpg: not a JPEG or PNG file").
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "baton/data/dataset.h"

namespace baton {

// A file that cannot be read as an image, or an image a pipeline cannot take: "file: why".
class ImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ImageSize {
  int64_t height = 0;
  int64_t width = 0;
  bool operator==(const ImageSize&) const = default;
};

// The width and height a JPEG's or PNG's header gives, without decoding its pixels. Throws
// ImageError for another kind of file, a corrupt header, or a PNG with 16-bit or palette pixels.
ImageSize image_size(std::string_view bytes, const std::string& name);

// The whole image, decoded: uint8 [height, width, channels]. Throws ImageError (a truncated or
// corrupt file among others).
at::Tensor decode_image(std::string_view bytes, const std::string& name, int channels);

// A file's bytes, read whole (a regular file of at most 64 MiB). Throws ImageError.
std::string read_image_file(const std::string& path);

// A region of an image in its own pixels, fractional: [top, top + height) x [left, left + width).
struct ImageRegion {
  double top = 0;
  double left = 0;
  double height = 0;
  double width = 0;
};

// What one example's pipeline does to its image: the region taken, the size it is resampled to,
// mirrored or not.
struct ImagePlan {
  ImageRegion region;
  ImageSize out;
  bool flip = false;
};

// The geometric transforms of a recipe's train_transforms / eval_transforms, in order:
//   {random_resized_crop: {size: 224, scale: [0.08, 1.0], ratio: [0.75, 1.3333]}}  (torchvision's)
//   {resize: 256} (the shorter side; or [height, width]),  {center_crop: 224} (or [height, width]),
//   horizontal_flip (or {horizontal_flip: {p: 0.5}})
// A size left out is the pipeline's image_size. The last step must leave image_size x image_size
// (an empty list resizes the whole image to it).
class ImageTransforms {
 public:
  ImageTransforms();
  ~ImageTransforms();
  ImageTransforms(const ImageTransforms& other);
  ImageTransforms& operator=(const ImageTransforms& other);
  // Throws std::invalid_argument naming the step and key: "train_transforms[1].resize: ...".
  static ImageTransforms parse(const nlohmann::json& steps, int64_t image_size, const std::string& where);

  // The plan for an image of `source` size. Throws ImageError (without the file's name) when a crop
  // is larger than the image.
  ImagePlan plan(ImageSize source, ExampleRng& rng) const;
  // Whether plan() draws random numbers (a random crop or flip).
  bool random() const;

 private:
  struct Step {
    enum class Kind { kRandomResizedCrop, kResize, kCenterCrop, kHorizontalFlip } kind;
    ImageSize size;  // resize / crop target; height 0 for resize: the shorter side = width
    double scale[2] = {0.08, 1.0};
    double ratio[2] = {3.0 / 4.0, 4.0 / 3.0};
    double p = 0.5;
  };
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Decodes what `plan` takes from the image and resamples it (antialiased bilinear) into `out`, a
// uint8 [plan.out.height, plan.out.width, channels] tensor (a slice of a batch: written in place).
// A JPEG's rows above and below the region are skipped and only its columns' iMCUs decoded, at the
// smallest DCT scale (1/2, 1/4, 1/8) that keeps the region at least the output's size. Throws
// ImageError naming `name`.
void render_image(std::string_view bytes, const std::string& name, int channels, const ImagePlan& plan,
                  at::Tensor& out);

// Writes uint8 [H, W, C] pixels as a PNG or (quality 1-100) a JPEG. Throws ImageError naming the path.
void write_png(const std::string& path, const at::Tensor& pixels);
void write_jpeg(const std::string& path, const at::Tensor& pixels, int quality = 90);

}  // namespace baton
