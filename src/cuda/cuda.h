// What baton asks of CUDA, behind a header that includes none of CUDA's (private to baton).
//
// src/cuda/cuda.cpp and nccl.cpp implement it when the LibTorch found has CUDA; src/cuda/none.cpp
// does otherwise, where device_count() is 0 and the rest throws saying that this LibTorch has no
// CUDA. Nothing outside src/cuda includes a CUDA header: the rest of baton names c10::Device.
//
//   if (baton::cuda::device_count() > 0) {
//     baton::cuda::Transfer copy({batch.input, batch.target}, /*device=*/0);  // side stream
//     std::vector<at::Tensor> on_device = copy.take();                     // ordered, no host wait
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace baton::cuda {

// LibTorch was built with CUDA (whether or not this machine has a GPU).
bool built();
// GPUs this process can use: 0 without a GPU or a driver.
int device_count();
// "NVIDIA H100 80GB HBM3 (sm_90)".
std::string device_name(int device);
// bfloat16 arithmetic in hardware (compute capability 8.0 and later).
bool supports_bf16(int device);
// Waits until the device has done everything queued on it.
void synchronize(int device);

// LibTorch's sync debug mode: with `on`, any call that makes the host wait for a device throws
// (tests use it to show that a loop never waits).
void set_sync_errors(bool on);

// Bytes of device memory held by LibTorch's caching allocator: for tensors now, in all (reserved),
// and the most for tensors since reset_peak(). Read from the allocator's counters: no device wait.
struct MemoryStats {
  int64_t allocated = 0;
  int64_t reserved = 0;
  int64_t peak = 0;
};
MemoryStats memory_stats(int device);
void reset_peak(int device);

// A point in the work queued on the device's current stream: when the device got there.
class Event {
 public:
  // Records it now on the current stream of `device`.
  explicit Event(int device);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  // The device got there (asks without waiting).
  bool done() const;
  // Seconds from `earlier` to this one on the device's clock. REQUIRES: both done().
  double seconds_since(const Event& earlier) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Host tensors copied to a device on a side stream, from pinned memory, while the device's current
// stream goes on: a batch reaches the device one step ahead without the host or the device waiting.
class Transfer {
 public:
  // Starts the copies (any thread). Tensors already on the device are kept as they are.
  Transfer(const std::vector<at::Tensor>& host, int device);
  ~Transfer();
  Transfer(Transfer&&) noexcept;
  Transfer& operator=(Transfer&&) noexcept;
  // The device tensors, for the calling thread's current stream: it waits for the copies on the
  // device (not on the host), and the allocator keeps their memory until that stream is done.
  std::vector<at::Tensor> take();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// A stream of its own on `device`, made for its owner alone (not one of LibTorch's pool, which
// hands the same 32 streams round to every caller: a prefetch copy, or another trainer, could land
// on a stream while it captures a graph). Waits for its work and is destroyed with the object.
class OwnStream {
 public:
  explicit OwnStream(int device);
  ~OwnStream();
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;
  int device() const;
  int64_t id() const;  // LibTorch's id of the stream, to tell streams apart

  struct Impl;

 private:
  friend class SideStream;
  std::unique_ptr<Impl> impl_;
};

// Waits until the calling thread's current stream on `device` has done what it queued (not the
// device's other streams).
void synchronize_stream(int device);
// `tensor` (on a CUDA device), made on another stream, is used on the calling thread's current
// one: the allocator keeps its memory until this stream has done what it queued when the tensor
// is freed. (The other stream's work on it must be done, or waited for, before this one reads it.)
void use_on_current_stream(const at::Tensor& tensor);

// The id of the stream LibTorch's pool hands out next on `device` (tests: never an OwnStream's).
int64_t pool_stream_id(int device);

// A side stream that the calling thread's work goes to while alive: it starts after what the
// current stream has queued, and the current stream, once restored, waits for it (on the device).
// CUDA graphs are captured on a stream other than the default one, and warmed up there.
class SideStream {
 public:
  explicit SideStream(const OwnStream& stream);
  ~SideStream();
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Work recorded once and replayed (a CUDA graph). Capture and replay inside a SideStream; the
// memory the captured work allocates stays the graph's, so its tensors (outputs, gradients) are
// rewritten in place by each replay.
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  // Runs `work` as a capture: its kernels are recorded, not run. Throws std::runtime_error with
  // CUDA's reason when the work cannot be captured (a host wait, a synchronising call); the stream
  // then leaves capture mode and the allocator gives the capture's memory back, so eager work after
  // it allocates as before. The graph can be captured again.
  void capture(const std::function<void()>& work);
  // Queues what was captured on the current stream.
  void replay();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// NCCL over the ranks of an MPI job: the gradient reductions of data parallelism on GPUs.
bool nccl_built();
// A new communicator's identity, made by one rank and handed to every other (by MPI).
std::string nccl_unique_id();
class Nccl {
 public:
  // Collective: every rank calls it with the same id. `device`: this rank's GPU.
  Nccl(const std::string& unique_id, int rank, int size, int device);
  ~Nccl();
  Nccl(const Nccl&) = delete;
  Nccl& operator=(const Nccl&) = delete;
  // Sums `tensor` (on this rank's device) over the ranks in place, on NCCL's own stream after what
  // the current stream has queued so far. Every rank starts the same reductions in the same order.
  void allreduce_sum(const at::Tensor& tensor);
  // Every rank's `mine` into `out` (size() times as long) in rank order, on NCCL's stream after what
  // the current stream queued; in place when `mine` is this rank's block of `out`.
  void allgather(const at::Tensor& mine, const at::Tensor& out);
  // The sums over the ranks of `in` (size() * out.numel() values), this rank's block into `out`
  // (with `accumulate`, added to it), on NCCL's stream.
  void reduce_scatter_sum(const at::Tensor& in, const at::Tensor& out, bool accumulate);
  // The current stream waits (on the device) for every collective started so far.
  void wait();
  // A mark after the collectives started so far, and the current stream waiting (on the device)
  // for what came before it only: a prefetched gather waited for without the reductions after it.
  int64_t mark();
  void wait(int64_t mark);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::cuda
