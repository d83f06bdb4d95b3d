// Devices: naming the one a run uses, and what baton asks of it (memory, timing, waiting).
//
//   c10::Device device = baton::parse_device("auto");  // cuda:0 on a machine with a GPU, else cpu
//   model->to(device);
//   baton::DeviceMarker start(device);                  // a point in the device's queued work
//   ...                                                 // queue a step
//   baton::DeviceMarker end(device);
//   if (end.done()) seconds = end.seconds_since(start); // the device's time, asked without waiting
//
// Everything here works on every LibTorch; on one without CUDA there are no CUDA devices.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <c10/core/Device.h>

namespace baton {

// "auto", "cpu", "cuda" or "cuda:N". auto: a GPU when there is one, else the CPU; auto and cuda
// take GPU `local_rank` modulo the number of GPUs (one GPU per rank of a job on one machine).
// Throws std::invalid_argument with a one-line reason naming the value: an unknown name, a CUDA
// device on a LibTorch without CUDA, on a machine without a GPU, or past the last GPU.
c10::Device parse_device(std::string_view text, int local_rank = 0);
// LibTorch was built with CUDA.
bool cuda_built();
// GPUs this process can use (0 without CUDA).
int cuda_device_count();
// "cpu" or "cuda:0 (NVIDIA H100 80GB HBM3 (sm_90))".
std::string describe(c10::Device device);
// bfloat16 arithmetic in hardware: CUDA devices of compute capability 8.0 on; on the CPU, AVX-512
// BF16 or AMX (threads.h: cpu_has_native_bf16 decides the CPU's).
bool cuda_supports_bf16(c10::Device device);
// Why cuBLAS cannot be deterministic with this CUBLAS_WORKSPACE_CONFIG value (nullptr: unset), or
// "" when it can (:4096:8 or :16:8). PyTorch reads the variable once, at the process's first cuBLAS
// call: a CUDA build of baton sets it to :4096:8 when it loads, unless it is set already.
std::string cublas_workspace_problem(const char* value);
// Waits until the device has done what it has queued (returns at once on the CPU).
void synchronize(c10::Device device);

// Bytes of a CUDA device's memory held by LibTorch's caching allocator: for tensors now, in all,
// and the most for tensors since reset_peak_memory(). nullopt for the CPU. No device wait.
struct DeviceMemory {
  int64_t allocated = 0;
  int64_t reserved = 0;
  int64_t peak = 0;
};
std::optional<DeviceMemory> device_memory(c10::Device device);
void reset_peak_memory(c10::Device device);

// A point in the work queued on a device: the host's clock on the CPU (where work is done when it
// is queued), an event on the current stream of a CUDA device.
class DeviceMarker {
 public:
  explicit DeviceMarker(c10::Device device);
  ~DeviceMarker();
  DeviceMarker(DeviceMarker&&) noexcept;
  DeviceMarker& operator=(DeviceMarker&&) noexcept;
  // The device has got here (asks without waiting; always true on the CPU).
  bool done() const;
  // Seconds from `earlier` to here on the device. REQUIRES: both done(), the same device.
  double seconds_since(const DeviceMarker& earlier) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// While alive, the calling thread's work on a CUDA device goes to a stream made for it alone, so
// that the work of threads each in such a scope runs side by side on the GPU (fused trials: several
// models training at once on one GPU). The stream starts after what the thread's current stream
// had queued, and that stream waits for it (on the device) when the scope ends. Streams are baton's
// own (not LibTorch's pool, whose streams every caller shares) and live as long as the process:
// tensors used on one may be freed after the scope. Nothing on the CPU. One thread's scope.
class OwnStreamScope {
 public:
  explicit OwnStreamScope(c10::Device device);
  ~OwnStreamScope();
  OwnStreamScope(const OwnStreamScope&) = delete;
  OwnStreamScope& operator=(const OwnStreamScope&) = delete;
  // LibTorch's id of the stream (0 on the CPU): tells streams apart.
  int64_t stream_id() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
