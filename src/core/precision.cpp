#include "baton/core/precision.h"

#include <memory>
#include <stdexcept>
#include <string>

#include <ATen/autocast_mode.h>
#include <torch/version.h>

// LibTorch 2.4 names autocast's settings by device type; 1.13 has one function per device.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define BATON_AUTOCAST_BY_DEVICE 1
#endif

namespace baton {
namespace {

void set_autocast(c10::DeviceType device, bool enabled, c10::ScalarType dtype) {
#ifdef BATON_AUTOCAST_BY_DEVICE
  at::autocast::set_autocast_enabled(device, enabled);
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(enabled);
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

}  // namespace

std::string_view to_string(Precision precision) { return to_name(precision); }

Precision parse_precision(std::string_view text) {
  if (auto value = from_name<Precision>(std::string(text))) return *value;
  throw std::invalid_argument("unknown precision '" + std::string(text) +
                              "': expected 'fp32', 'amp_bf16' or 'amp_fp16'");
}

c10::ScalarType compute_dtype(Precision precision) {
  switch (precision) {
    case Precision::kAmpBf16: return c10::ScalarType::BFloat16;
    case Precision::kAmpFp16: return c10::ScalarType::Half;
    default: return c10::ScalarType::Float;
  }
}

bool autocast_enabled(c10::DeviceType device) {
#ifdef BATON_AUTOCAST_BY_DEVICE
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

c10::ScalarType autocast_dtype(c10::DeviceType device) {
#ifdef BATON_AUTOCAST_BY_DEVICE
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

struct AutocastGuard::Impl {
  bool on_ = false;
  c10::DeviceType device_ = c10::DeviceType::CPU;
  bool was_enabled_ = false;
  c10::ScalarType was_dtype_ = c10::ScalarType::BFloat16;
};

AutocastGuard::AutocastGuard(Precision precision, c10::DeviceType device) : impl_(std::make_unique<Impl>()) {
  impl_->on_ = precision != Precision::kFp32;
  impl_->device_ = device;
  if (!impl_->on_) return;
  impl_->was_enabled_ = autocast_enabled(impl_->device_);
  impl_->was_dtype_ = autocast_dtype(impl_->device_);
  set_autocast(impl_->device_, true, compute_dtype(precision));
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!impl_->on_) return;
  // Weights cast once per forward are cached until the outermost region ends.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(impl_->device_, impl_->was_enabled_, impl_->was_dtype_);
}

}  // namespace baton
