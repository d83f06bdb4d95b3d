#include "baton/data/dataset.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <stdexcept>

#include <torch/torch.h>

namespace baton {
namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

ExampleRng::ExampleRng(uint64_t seed, int64_t epoch, int64_t index)
    : state_(splitmix(splitmix(splitmix(seed) ^ static_cast<uint64_t>(epoch)) ^ static_cast<uint64_t>(index))) {}

uint64_t ExampleRng::next() {
  state_ += 0x9E3779B97F4A7C15ULL;
  return splitmix(state_);
}

double ExampleRng::uniform(double low, double high) {
  return low + (high - low) * static_cast<double>(next() >> 11) * 0x1.0p-53;
}

int64_t ExampleRng::below(int64_t n) {
  return static_cast<int64_t>(next() % static_cast<uint64_t>(n));  // a bias of n / 2^64: none that shows
}

struct TensorDataset::Impl {
  at::Tensor inputs_;
  at::Tensor targets_;
  int64_t num_classes_ = 0;
  std::optional<Standardization> standardization_;
};

TensorDataset::~TensorDataset() = default;

int64_t TensorDataset::num_classes() const { return impl_->num_classes_; }
c10::Device TensorDataset::device() const { return impl_->inputs_.device(); }
const std::optional<Standardization>& TensorDataset::standardization() const { return impl_->standardization_; }
void TensorDataset::set_standardization(Standardization s) { impl_->standardization_ = s; }
const at::Tensor& TensorDataset::inputs() const { return impl_->inputs_; }
const at::Tensor& TensorDataset::targets() const { return impl_->targets_; }

TensorDataset::TensorDataset(at::Tensor inputs, at::Tensor targets) : impl_(std::make_unique<Impl>()) {
  impl_->inputs_ = inputs.contiguous();
  impl_->targets_ = targets.contiguous();
  if (!impl_->inputs_.defined() || impl_->inputs_.dim() < 1)
    throw std::invalid_argument("TensorDataset: inputs must have a leading example dimension");
  if (!impl_->targets_.defined() || impl_->targets_.dim() < 1)
    throw std::invalid_argument("TensorDataset: targets must have a leading example dimension");
  if (impl_->inputs_.size(0) != impl_->targets_.size(0)) {
    throw std::invalid_argument("TensorDataset: " + std::to_string(impl_->inputs_.size(0)) + " inputs but " +
                                std::to_string(impl_->targets_.size(0)) + " targets; they must be equal");
  }
  if (impl_->targets_.dim() == 1 && !at::isFloatingType(impl_->targets_.scalar_type()) && impl_->targets_.numel() > 0) {
    impl_->num_classes_ = impl_->targets_.max().item<int64_t>() + 1;
  }
}

int64_t TensorDataset::size() const { return impl_->inputs_.size(0); }

int64_t TensorDataset::target_values() const {
  if (!at::isFloatingType(impl_->targets_.scalar_type())) return 0;
  return impl_->targets_.dim() == 1 ? 1 : impl_->targets_.numel() / std::max<int64_t>(1, impl_->targets_.size(0));
}

namespace {

// Rows of a contiguous CPU tensor copied one by one: what index_select does, without LibTorch's
// thread team. On a prefetch thread, a gather through index_select starts a second OpenMP team
// that spins beside the training's own (13% of the steps' time on 2 cores: bench/trainer_bench).
at::Tensor gather_rows(const at::Tensor& source, const at::Tensor& indices) {
  if (!source.is_cpu() || !source.is_contiguous() || source.dim() == 0 || indices.scalar_type() != at::kLong ||
      !indices.is_contiguous()) {
    return source.index_select(0, indices);
  }
  std::vector<int64_t> shape = source.sizes().vec();
  shape[0] = indices.numel();
  at::Tensor out = at::empty(shape, source.options());
  const int64_t rows = source.size(0);
  const auto row_bytes = static_cast<std::size_t>(source.numel() / std::max<int64_t>(rows, 1)) * source.element_size();
  const auto* from = static_cast<const char*>(source.data_ptr());
  auto* to = static_cast<char*>(out.data_ptr());
  const int64_t* index = indices.data_ptr<int64_t>();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    if (index[i] < 0 || index[i] >= rows) return source.index_select(0, indices);  // its error message
    std::memcpy(to + static_cast<std::size_t>(i) * row_bytes, from + static_cast<std::size_t>(index[i]) * row_bytes,
                row_bytes);
  }
  return out;
}

}  // namespace

Batch TensorDataset::get_batch(const at::Tensor& indices) const {
  const at::Tensor at = indices.device() == impl_->inputs_.device() ? indices : indices.to(impl_->inputs_.device());
  return {gather_rows(impl_->inputs_, at), gather_rows(impl_->targets_, at)};
}

TensorDataset::TensorDataset(at::Tensor inputs, at::Tensor targets, int64_t num_classes)
    : impl_(std::make_unique<Impl>()) {
  impl_->inputs_ = std::move(inputs);
  impl_->targets_ = std::move(targets);
  impl_->num_classes_ = num_classes;
}

std::shared_ptr<TensorDataset> TensorDataset::to(c10::Device device) const {
  // Checked and counted already: nothing to read back from the device.
  auto moved = std::shared_ptr<TensorDataset>(
      new TensorDataset(impl_->inputs_.to(device), impl_->targets_.to(device), impl_->num_classes_));
  moved->impl_->standardization_ = impl_->standardization_;
  return moved;
}

at::Tensor TensorDataset::standardize(const at::Tensor& raw) const {
  if (!impl_->standardization_) return raw;
  return (raw - impl_->standardization_->mean) / impl_->standardization_->std;
}

std::vector<int64_t> TensorDataset::input_shape() const {
  auto sizes = impl_->inputs_.sizes();
  return {sizes.begin() + 1, sizes.end()};
}

}  // namespace baton
