// WebDataset: images in tar shards (local files or http:// URLs), a sample being the members that
// share a key: KEY.jpg (or .jpeg, .png) and KEY.cls, the class index as text.
//
//   auto train = baton::WebDataset::open(baton::expand_braces("shards/train-{000000..000099}.tar"),
//                                        baton::WebDatasetOptions().shuffle_buffer(1000));
//   baton::DataLoader loader(train, baton::DataLoaderOptions().batch_size(256));
//
// Opening a data set indexes its shards (each read once: a local shard's headers, a URL's bytes
// streamed, or a URL's index kept from an earlier run), so the samples are counted and every later
// read is a range. The shards are cut in
// chunks of shuffle_buffer samples, each read with one request. An epoch's order (epoch_order) is
// the chunks shuffled, then the samples shuffled within windows of shuffle_buffer: a batch draws on
// two or three chunks, and at most a few chunks are held at once. The order and each sample's crop
// come from (seed, epoch) only, so batches are the same for any number of workers, a resumed run
// continues with the batches an uninterrupted one would have seen, and a broken connection (retried
// from its last byte) loses and repeats nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "baton/core/options.h"
#include "baton/data/dataset.h"
#include "baton/data/image_folder.h"

namespace baton {

class WebDatasetOptions {
  // Decoding and transforms (channels, image_size, transforms, normalize, workers, bad_files, seed).
  BATON_ARG(ImageFolderOptions, images);
  // Samples a chunk (one read) and a window shuffled together; memory holds a few chunks.
  BATON_ARG(int64_t, shuffle_buffer) = 1000;
  // How long a URL's broken connection or 5xx is retried (UrlOptions::retry_seconds).
  BATON_ARG(double, retry_seconds) = 60;
  // A URL shard's index is kept in this folder (empty: $XDG_CACHE_HOME/baton/webdataset, else
  // ~/.cache/baton/webdataset) and used again while the server gives the same size and ETag or
  // Last-Modified (one HEAD request), so a second run or a resume does not download it again.
  BATON_ARG(bool, cache_index) = true;
  BATON_ARG(std::string, index_cache);
  // Tar headers of every kind (files, folders, long names, pax records) one shard may have: an
  // endless or hostile stream stops within this many (512 MB of empty members at the default).
  BATON_ARG(int64_t, max_tar_headers) = 1'000'000;
};

// "train-{000000..000099}.tar" → 100 names, zero padding kept; "{a,b}" lists; several braces
// multiply. Throws std::invalid_argument for an unclosed brace, a bad range or over 1,000,000 names.
std::vector<std::string> expand_braces(const std::string& pattern);

class WebDataset : public Dataset {
 public:
  // Indexes `shards` (paths or URLs). `num_classes` 0: the largest label + 1; given (an evaluation
  // set's, from its training set): a larger label is an error. Throws ImageError naming the shard
  // (and member) for a shard that is not a tar file, is truncated, answers 404, or holds a sample
  // without its image or its .cls (with bad_files: skip, such samples are left out and reported).
  static std::shared_ptr<WebDataset> open(const std::vector<std::string>& shards, WebDatasetOptions options,
                                          int64_t num_classes = 0);
  ~WebDataset() override;

  int64_t size() const override;
  Batch get_batch(const at::Tensor& indices) const override;
  // uint8 inputs [N, C, H, W] (channels-last memory), int64 targets [N].
  Batch get_epoch_batch(const at::Tensor& indices, int64_t epoch) const override;
  at::Tensor epoch_order(int64_t epoch, uint64_t seed, bool shuffle) const override;
  at::Tensor finish_inputs(const at::Tensor& inputs) const override;
  std::vector<int64_t> input_shape() const override;
  int64_t num_classes() const override;
  std::vector<std::string> class_names() const override;

  const std::vector<std::string>& shards() const;
  const WebDatasetOptions& options() const;
  // Sample `index`'s name, "SHARD: KEY", and label.
  std::string sample_name(int64_t index) const;
  int64_t label(int64_t index) const;
  // Samples left out or replaced (bad_files: skip), with why.
  std::vector<std::string> skipped() const;
  // Chunks read so far (each a range request): how often the shards were read.
  int64_t chunk_reads() const;

 private:
  WebDataset(std::vector<std::string> shards, WebDatasetOptions options);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
