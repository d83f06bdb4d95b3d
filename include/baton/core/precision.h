// Precision: the number format a run computes in, and LibTorch's autocast for it on a device.
//
//   {
//     baton::AutocastGuard autocast(baton::Precision::kAmpBf16, c10::kCUDA);
//     outputs = model->forward(inputs);  // matrix products and convolutions in bfloat16
//   }                                    // autocast as it was before
//
// fp32 computes in float32 (matrix products in TF32 on GPUs that have it when the run's `tf32` is
// on); amp_bf16 runs forward and loss under autocast to bfloat16 (CPU and CUDA); amp_fp16 under
// autocast to float16, with the loss scaled against underflow (GradScaler, CUDA only).
#pragma once

#include <memory>
#include <string_view>

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include "baton/core/options.h"

namespace baton {

enum class Precision { kFp32, kAmpBf16, kAmpFp16 };
BATON_ENUM_NAMES(Precision, {Precision::kFp32, "fp32"}, {Precision::kAmpBf16, "amp_bf16"},
                 {Precision::kAmpFp16, "amp_fp16"})
// "fp32", "amp_bf16", "amp_fp16".
std::string_view to_string(Precision precision);
// Throws std::invalid_argument naming the bad string and the accepted ones.
Precision parse_precision(std::string_view text);
// The autocast type of a mixed precision (kFloat for fp32).
c10::ScalarType compute_dtype(Precision precision);

// Whether autocast is on for `device`, and to which type.
bool autocast_enabled(c10::DeviceType device);
c10::ScalarType autocast_dtype(c10::DeviceType device);

// Autocast for `precision` on `device` while alive (nothing for fp32); restores what was there.
class AutocastGuard {
 public:
  AutocastGuard(Precision precision, c10::DeviceType device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
