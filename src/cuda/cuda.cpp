// src/cuda/cuda.h on a LibTorch with CUDA.
#include "cuda/cuda.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#if __has_include(<c10/cuda/CUDAEvent.h>)
#include <c10/cuda/CUDAEvent.h>
using CudaEvent = c10::cuda::CUDAEvent;
#else
#include <ATen/cuda/CUDAEvent.h>
using CudaEvent = at::cuda::CUDAEvent;
#endif

namespace baton::cuda {
namespace {

// A device's index; -1 (c10::Device("cuda"), no index) is the current device, as in LibTorch.
c10::DeviceIndex index_of(int device) {
  if (device == -1 && device_count() > 0) return c10::cuda::current_device();
  if (device < 0 || device >= device_count()) {
    throw std::invalid_argument("cuda:" + std::to_string(device) + ": this machine has " +
                                std::to_string(device_count()) + " CUDA device(s)");
  }
  return static_cast<c10::DeviceIndex>(device);
}

// PyTorch reads CUBLAS_WORKSPACE_CONFIG once, when the process makes its first cuBLAS handle, and a
// deterministic run needs :4096:8 from then on: set while libbaton loads, before anything can run a
// matrix product, unless the user chose a value (a deterministic Trainer then checks it).
[[maybe_unused]] const bool kCublasWorkspaceSet = [] {
  return ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0) == 0;
}();

}  // namespace

bool built() { return true; }

int device_count() { return static_cast<int>(c10::cuda::device_count()); }

std::string device_name(int device) {
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(index_of(device));
  return std::string(p->name) + " (sm_" + std::to_string(p->major) + std::to_string(p->minor) + ")";
}

bool supports_bf16(int device) { return at::cuda::getDeviceProperties(index_of(device))->major >= 8; }

void synchronize(int device) {
  c10::cuda::CUDAGuard guard(index_of(device));
  c10::cuda::device_synchronize();
}

void set_sync_errors(bool on) {
  c10::cuda::warning_state().set_sync_debug_mode(on ? c10::cuda::SyncDebugMode::L_ERROR
                                                    : c10::cuda::SyncDebugMode::L_DISABLED);
}

MemoryStats memory_stats(int device) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index_of(device));
  constexpr std::size_t kAll = 0;  // StatType::AGGREGATE
  return {stats.allocated_bytes[kAll].current, stats.reserved_bytes[kAll].current, stats.allocated_bytes[kAll].peak};
}

void reset_peak(int device) { c10::cuda::CUDACachingAllocator::resetPeakStats(index_of(device)); }

// ---- Event ------------------------------------------------------------------------------------

struct Event::Impl {
  CudaEvent event{cudaEventDefault};  // with timing
};

Event::Event(int device) : impl_(std::make_unique<Impl>()) {
  impl_->event.record(c10::cuda::getCurrentCUDAStream(index_of(device)));
}

Event::~Event() = default;

bool Event::done() const { return impl_->event.query(); }

double Event::seconds_since(const Event& earlier) const {
  return static_cast<double>(earlier.impl_->event.elapsed_time(impl_->event)) / 1000.0;
}

// ---- Transfer ---------------------------------------------------------------------------------

struct Transfer::Impl {
  c10::DeviceIndex device;
  std::vector<at::Tensor> tensors;
  CudaEvent copied;
};

Transfer::Transfer(const std::vector<at::Tensor>& host, int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = index_of(device);
  const c10::Device target(c10::kCUDA, impl_->device);
  c10::cuda::CUDAGuard guard(impl_->device);
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, impl_->device);
  c10::cuda::CUDAStreamGuard on_side(side);
  for (const at::Tensor& t : host) {
    if (!t.defined() || t.device() == target) {
      impl_->tensors.push_back(t);
      continue;
    }
    // From pinned memory a copy is a DMA that neither the host nor the current stream waits for.
    const at::Tensor pinned = t.is_cpu() && !t.is_pinned() ? t.pin_memory() : t;
    impl_->tensors.push_back(pinned.to(target, /*non_blocking=*/true));
  }
  impl_->copied.record(side);
}

Transfer::~Transfer() = default;
Transfer::Transfer(Transfer&&) noexcept = default;
Transfer& Transfer::operator=(Transfer&&) noexcept = default;

std::vector<at::Tensor> Transfer::take() {
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(impl_->device);
  impl_->copied.block(current);
  // Made on the side stream, used on this one: the allocator must not reuse them before it is done.
  for (const at::Tensor& t : impl_->tensors) {
    if (t.defined() && t.is_cuda()) c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), current);
  }
  return std::move(impl_->tensors);
}

// ---- OwnStream, SideStream, Graph ------------------------------------------------------------

struct OwnStream::Impl {
  c10::DeviceIndex device = 0;
  cudaStream_t raw = nullptr;
};

OwnStream::OwnStream(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = index_of(device);
  c10::cuda::CUDAGuard guard(impl_->device);
  C10_CUDA_CHECK(cudaStreamCreateWithFlags(&impl_->raw, cudaStreamNonBlocking));
}

OwnStream::~OwnStream() {
  if (impl_->raw == nullptr) return;
  c10::cuda::CUDAGuard guard(impl_->device);
  // The allocator may still hold blocks used on it: nothing may run there once it is gone.
  C10_CUDA_CHECK_WARN(cudaStreamSynchronize(impl_->raw));
  C10_CUDA_CHECK_WARN(cudaStreamDestroy(impl_->raw));
}

int OwnStream::device() const { return impl_->device; }

int64_t OwnStream::id() const { return c10::cuda::getStreamFromExternal(impl_->raw, impl_->device).id(); }

void synchronize_stream(int device) { c10::cuda::getCurrentCUDAStream(index_of(device)).synchronize(); }

void use_on_current_stream(const at::Tensor& tensor) {
  c10::cuda::CUDACachingAllocator::recordStream(tensor.storage().data_ptr(),
                                                c10::cuda::getCurrentCUDAStream(tensor.device().index()));
}

int64_t pool_stream_id(int device) {
  return c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index_of(device)).id();
}

namespace {

// `waiter` goes on (on the device) only after what `stream` has queued so far.
void wait_for(c10::cuda::CUDAStream waiter, c10::cuda::CUDAStream stream) {
  CudaEvent done;
  done.record(stream);
  done.block(waiter);
}

}  // namespace

struct SideStream::Impl {
  Impl(c10::cuda::CUDAStream previous, c10::cuda::CUDAStream side) : previous(previous), side(side) {}
  c10::cuda::CUDAStream previous;
  c10::cuda::CUDAStream side;
  std::optional<c10::cuda::CUDAStreamGuard> guard;
};

SideStream::SideStream(const OwnStream& stream) {
  const auto index = static_cast<c10::DeviceIndex>(stream.device());
  impl_ = std::make_unique<Impl>(c10::cuda::getCurrentCUDAStream(index),
                                 c10::cuda::getStreamFromExternal(stream.impl_->raw, index));
  wait_for(impl_->side, impl_->previous);
  impl_->guard.emplace(impl_->side);
}

SideStream::~SideStream() {
  impl_->guard.reset();
  wait_for(impl_->previous, impl_->side);
}

struct Graph::Impl {
  std::unique_ptr<at::cuda::CUDAGraph> graph = std::make_unique<at::cuda::CUDAGraph>();
  c10::MempoolId_t pool{0, 0};  // the graph's memory, known by its id even when the capture fails
  c10::DeviceIndex device = 0;
};

Graph::Graph() : impl_(std::make_unique<Impl>()) {}
Graph::~Graph() = default;

namespace {

// Ends a capture that went wrong and gives its memory back. A capture_end that throws (the capture
// was invalidated: a host wait, a synchronising call) leaves the stream capturing, the allocator
// sending this stream's allocations to the graph's private pool, and the pool held: every eager
// step after it would allocate there and never give it back.
void abandon_capture(at::cuda::CUDAGraph& graph, c10::MempoolId_t pool, c10::DeviceIndex device) {
  bool ended = false;
  try {
    graph.capture_end();
    ended = true;
  } catch (const c10::Error&) {
  }
  if (!ended) {
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device).stream();
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(stream, &partial);
      if (partial != nullptr) cudaGraphDestroy(partial);
    }
    try {
      c10::cuda::CUDACachingAllocator::endAllocateToPool(device, pool);
    } catch (const c10::Error&) {  // LibTorch ended it already
    }
    try {
      c10::cuda::CUDACachingAllocator::releasePool(device, pool);
    } catch (const c10::Error&) {
    }
  }
  (void)cudaGetLastError();  // the capture's error is not the next kernel's
}

}  // namespace

void Graph::capture(const std::function<void()>& work) {
  const auto fail = [](const std::string& what) {
    return std::runtime_error("CUDA graph capture failed: " + what.substr(0, what.find('\n')));
  };
  Impl& i = *impl_;
  i.device = c10::cuda::current_device();
  // A pool of the graph's own, whose id is known here (LibTorch tells a graph's pool only after a
  // capture that worked).
  i.pool = at::cuda::graph_pool_handle();
  try {
    // Thread-local: a data loader's thread may use CUDA meanwhile.
    i.graph->capture_begin(i.pool, cudaStreamCaptureModeThreadLocal);
  } catch (const c10::Error& e) {
    i.graph = std::make_unique<at::cuda::CUDAGraph>();
    throw fail(e.what_without_backtrace());
  }
  std::string why;
  try {
    work();
  } catch (const c10::Error& e) {
    why = e.what_without_backtrace();
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (why.empty()) {
    try {
      i.graph->capture_end();
      return;
    } catch (const c10::Error& e) {
      why = e.what_without_backtrace();
    }
  }
  // Ending again is harmless: a stream no longer capturing is left as it is; the pool is ended and
  // released once either way.
  abandon_capture(*i.graph, i.pool, i.device);
  i.graph = std::make_unique<at::cuda::CUDAGraph>();
  throw fail(why);
}

void Graph::replay() { impl_->graph->replay(); }

}  // namespace baton::cuda
