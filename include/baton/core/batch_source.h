// A batch, and what State knows of the loader in use (baton/data's DataLoader is one): its length,
// its batch size, its batches, and a fresh in-order pass over the same examples.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace baton {

// One batch of examples. Algorithms may replace either tensor (MixUp mixes inputs, label
// smoothing turns class indices into soft targets).
struct Batch {
  at::Tensor input;
  at::Tensor target;

  // Examples in the batch: input.size(0), or 0 when input is undefined.
  int64_t size() const;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Batches in one epoch, and examples in a whole batch (over every data-parallel rank).
  virtual int64_t num_batches() const = 0;
  virtual int64_t batch_size() const = 0;
  // Begins epoch `epoch` at its first batch; next() then gives its batches, and nullopt at its end.
  virtual void start_epoch(int64_t epoch) = 0;
  virtual std::optional<Batch> next() = 0;
  // A new source over the same examples and batch size: in order, unsharded, its batches on
  // `device` (BatchNorm statistics recomputed over the training data after SWA).
  virtual std::unique_ptr<BatchSource> in_order(c10::Device device) const = 0;
};

}  // namespace baton
