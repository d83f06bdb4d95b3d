#include "baton/data/dataset.h"

#include <stdexcept>

#include <torch/torch.h>

namespace baton {

TensorDataset::TensorDataset(at::Tensor inputs, at::Tensor targets)
    : inputs_(inputs.contiguous()), targets_(targets.contiguous()) {
  if (!inputs_.defined() || inputs_.dim() < 1)
    throw std::invalid_argument("TensorDataset: inputs must have a leading example dimension");
  if (!targets_.defined() || targets_.dim() < 1)
    throw std::invalid_argument("TensorDataset: targets must have a leading example dimension");
  if (inputs_.size(0) != targets_.size(0)) {
    throw std::invalid_argument("TensorDataset: " + std::to_string(inputs_.size(0)) + " inputs but " +
                                std::to_string(targets_.size(0)) + " targets; they must be equal");
  }
  if (targets_.dim() == 1 && !at::isFloatingType(targets_.scalar_type()) && targets_.numel() > 0) {
    num_classes_ = targets_.max().item<int64_t>() + 1;
  }
}

int64_t TensorDataset::size() const { return inputs_.size(0); }

Batch TensorDataset::get_batch(const at::Tensor& indices) const {
  const at::Tensor at = indices.device() == inputs_.device() ? indices : indices.to(inputs_.device());
  return {inputs_.index_select(0, at), targets_.index_select(0, at)};
}

TensorDataset::TensorDataset(at::Tensor inputs, at::Tensor targets, int64_t num_classes)
    : inputs_(std::move(inputs)), targets_(std::move(targets)), num_classes_(num_classes) {}

std::shared_ptr<TensorDataset> TensorDataset::to(c10::Device device) const {
  // Checked and counted already: nothing to read back from the device.
  auto moved = std::shared_ptr<TensorDataset>(new TensorDataset(inputs_.to(device), targets_.to(device), num_classes_));
  moved->standardization_ = standardization_;
  return moved;
}

at::Tensor TensorDataset::standardize(const at::Tensor& raw) const {
  if (!standardization_) return raw;
  return (raw - standardization_->mean) / standardization_->std;
}

std::vector<int64_t> TensorDataset::input_shape() const {
  auto sizes = inputs_.sizes();
  return {sizes.begin() + 1, sizes.end()};
}

}  // namespace baton
