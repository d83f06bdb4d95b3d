// Dataset: examples addressed by index, gathered a whole batch at a time.
//
//   auto data = std::make_shared<baton::TensorDataset>(images, labels);  // images [N, C, H, W]
//   baton::Batch batch = data->get_batch(torch::tensor({0, 5, 9}));       // 3 examples
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "baton/core/state.h"

namespace baton {

// The classes a data set may have: a label makes as many class names (a list's label of 999999999
// would be a billion of them).
inline constexpr int64_t kMaxClasses = 1'000'000;

// The random numbers of one example in one epoch, drawn from (seed, epoch, index) only: a data set
// whose examples are random (crops, window offsets) gives the same batches for any number of
// workers, in any order, and after a resume.
class ExampleRng {
 public:
  ExampleRng(uint64_t seed, int64_t epoch, int64_t index);
  uint64_t next();
  double uniform(double low, double high);  // [low, high)
  int64_t below(int64_t n);                 // [0, n), n > 0

 private:
  uint64_t state_;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  // Number of examples.
  virtual int64_t size() const = 0;
  // The examples at `indices` (a 1-D int64 tensor) as one batch, in that order.
  virtual Batch get_batch(const at::Tensor& indices) const = 0;
  // The same in epoch `epoch`, for a data set whose examples change from epoch to epoch (random crops
  // drawn from (seed, epoch, index)). Default: get_batch.
  virtual Batch get_epoch_batch(const at::Tensor& indices, int64_t epoch) const { return get_batch(indices); }
  // The order of the examples in epoch `epoch` for a loader seeded with `seed` that shuffles or
  // not: an int64 tensor holding each index once. Undefined (the default): the loader's own, a
  // permutation drawn from (seed, epoch) or 0..N-1. A data set read in large pieces (WebDataset's
  // shards) gives one that keeps a batch's examples within a few of them.
  virtual at::Tensor epoch_order(int64_t epoch, uint64_t seed, bool shuffle) const { return {}; }
  // A batch's inputs as the model takes them, once on the run's device: a data set whose batches
  // travel small (uint8 images) converts them there (to normalised float). Default: as they are.
  virtual at::Tensor finish_inputs(const at::Tensor& inputs) const { return inputs; }
  // The shape of one input ([C, H, W] for images).
  virtual std::vector<int64_t> input_shape() const = 0;
  // Tokens in one example, for data sets of token windows (the window's length): what the
  // duration unit `tok` and throughput/tokens_per_sec count. Default: 0 (not token data).
  virtual int64_t tokens_per_example() const { return 0; }
  // Number of classes for classification data (largest label + 1); 0 when not known.
  virtual int64_t num_classes() const { return 0; }
  // Values per example of float targets (regression, multi-label 0/1): 1 for targets [N], K for
  // [N, K]; 0 for class indices.
  virtual int64_t target_values() const { return 0; }
  // The classes' names, a label's index into them (an image folder's class folders); empty when the
  // classes have no names.
  virtual std::vector<std::string> class_names() const { return {}; }
  // Where the examples are: get_batch() takes indices and gives batches on this device.
  // Default: the CPU.
  virtual c10::Device device() const { return c10::Device(c10::kCPU); }
  // get_batch is a copy of rows already in memory, which a DataLoader does in line rather than on
  // its prefetch thread (the hand-off per batch costs more than the copy) unless the batch then
  // goes to another device. Default: false (decoding, augmenting, reading: worth a thread).
  virtual bool gather_is_cheap() const { return false; }
};

// How a data set's inputs were standardised from the values read (bytes already scaled to
// [0, 1]): x = (raw - mean) / std. Inputs given later to the trained model (baton predict --inputs)
// are prepared the same way.
struct Standardization {
  double mean = 0.0;
  double std = 1.0;
};

// Inputs and targets held in memory as two contiguous tensors with one example per row.
class TensorDataset : public Dataset {
 public:
  ~TensorDataset() override;
  // Throws std::invalid_argument when the two disagree on the number of examples.
  TensorDataset(at::Tensor inputs, at::Tensor targets);

  int64_t size() const override;
  Batch get_batch(const at::Tensor& indices) const override;
  std::vector<int64_t> input_shape() const override;
  int64_t num_classes() const override;
  int64_t target_values() const override;
  c10::Device device() const override;
  bool gather_is_cheap() const override { return true; }
  // The same examples on `device` (recipe key data.on_device: a data set that fits in the GPU's
  // memory is gathered there, with no copy per batch).
  std::shared_ptr<TensorDataset> to(c10::Device device) const;
  // How the inputs were standardised; nullopt when they are as read. Default: nullopt.
  const std::optional<Standardization>& standardization() const;
  void set_standardization(Standardization s);
  // (raw - mean) / std as this data set's inputs were; `raw` unchanged without a standardization.
  at::Tensor standardize(const at::Tensor& raw) const;

  const at::Tensor& inputs() const;
  const at::Tensor& targets() const;

 private:
  TensorDataset(at::Tensor inputs, at::Tensor targets, int64_t num_classes);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
