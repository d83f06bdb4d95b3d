// The part of an image data set that does not depend on where its files are: the options checked,
// the decode threads, one example's pixels from its file's bytes, a batch with bad files skipped
// and reported, and the uint8 batch made normalised float on the run's device. ImageFolder (files)
// and WebDataset (tar shards) each hold one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

#include "baton/core/state.h"
#include "baton/data/image_folder.h"
#include "baton/data/images.h"

namespace baton::image_detail {

class ImagePipeline {
 public:
  // Checks channels, image_size, normalize and the transforms (std::invalid_argument) and starts
  // the decode threads.
  explicit ImagePipeline(ImageFolderOptions options);
  ~ImagePipeline();
  ImagePipeline(const ImagePipeline&) = delete;
  ImagePipeline& operator=(const ImagePipeline&) = delete;

  const ImageFolderOptions& options() const { return options_; }

  // Calls f(0) ... f(n - 1) on the decode threads (and the caller); returns when all are done,
  // rethrowing the first exception (the rest of the calls are then not made).
  void run(int64_t n, const std::function<void(int64_t)>& f) const;

  // Example `index`'s pixels at `epoch` from its file's `bytes` (`name` in messages), into `out`
  // (uint8 [H, W, C]). `size`: its header's, read from the bytes when not given. Throws ImageError.
  void render(std::string_view bytes, const std::string& name, std::optional<ImageSize> size, int64_t index,
              int64_t epoch, at::Tensor& out) const;

  // Throws ImageError (naming `name`) when an image of `size` cannot go through the transforms (a
  // crop larger than it): what would fail mid-run is found when the data set is built.
  void check_plan(ImageSize size, const std::string& name, int64_t index) const;

  // A batch of the examples `indices` of a data set of `count`: example(id, out) renders example id
  // into out and returns its label. With bad_files: skip, an example that throws ImageError is
  // replaced by the next one ((id + 1) % count) and reported. uint8 [N, C, H, W] (channels-last
  // memory) and int64 labels [N].
  Batch batch(const at::Tensor& indices, int64_t count,
              const std::function<int64_t(int64_t id, at::Tensor& out)>& example) const;

  // uint8 inputs as normalised float, channels-last, where they are.
  at::Tensor finish_inputs(const at::Tensor& inputs) const;
  std::vector<int64_t> input_shape() const;

  // A file or example left out or replaced (bad_files: skip), with why.
  void report_skip(std::string why) const;
  std::vector<std::string> skipped() const;
  // Logs (a warning) how many of `total` files or samples (`what`) were skipped by now, naming a
  // few, for `origin`.
  void warn_skipped(const std::string& origin, int64_t total, const char* what = "files") const;

 private:
  struct Pool;
  ImageFolderOptions options_;
  ImageTransforms transforms_;
  std::unique_ptr<Pool> pool_;
  at::Tensor mean_, std_;  // [1, C, 1, 1] float, of 0..255 pixels
};

}  // namespace baton::image_detail
