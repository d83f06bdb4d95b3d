// The NCCL part of src/cuda/cuda.h (compiled with BATON_HAVE_NCCL when nccl.h was found).
#include "cuda/cuda.h"

#include <map>
#include <stdexcept>
#include <vector>

#ifdef BATON_HAVE_NCCL
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <nccl.h>
#if __has_include(<c10/cuda/CUDAEvent.h>)
#include <c10/cuda/CUDAEvent.h>
using CudaEvent = c10::cuda::CUDAEvent;
#else
#include <ATen/cuda/CUDAEvent.h>
using CudaEvent = at::cuda::CUDAEvent;
#endif
#endif

namespace baton::cuda {

#ifdef BATON_HAVE_NCCL

namespace {

void check(ncclResult_t result, const char* call) {
  if (result != ncclSuccess) throw std::runtime_error(std::string("NCCL: ") + call + ": " + ncclGetErrorString(result));
}

ncclDataType_t nccl_type(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return ncclFloat32;
    case at::kDouble: return ncclFloat64;
    case at::kHalf: return ncclFloat16;
    case at::kBFloat16: return ncclBfloat16;
    default:
      throw std::invalid_argument(std::string("NCCL: cannot reduce tensors of type ") + c10::toString(t.scalar_type()));
  }
}

}  // namespace

struct Nccl::Impl {
  ncclComm_t comm = nullptr;
  c10::DeviceIndex device = 0;
  c10::cuda::CUDAStream stream = c10::cuda::getDefaultCUDAStream();
  ~Impl() {
    if (comm != nullptr) ncclCommDestroy(comm);
  }
  void follow(const std::vector<at::Tensor>& tensors);
  std::map<int64_t, CudaEvent> marks;  // not waited for yet
  int64_t next_mark = 0;
};

bool nccl_built() { return true; }

std::string nccl_unique_id() {
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  return std::string(id.internal, sizeof id.internal);
}

Nccl::Nccl(const std::string& unique_id, int rank, int size, int device) {
  ncclUniqueId id;
  if (unique_id.size() != sizeof id.internal) throw std::invalid_argument("NCCL: a unique id of the wrong size");
  std::copy(unique_id.begin(), unique_id.end(), id.internal);
  impl_ = std::make_unique<Impl>();  // after the check: Impl's stream asks the device
  impl_->device = static_cast<c10::DeviceIndex>(device);
  c10::cuda::CUDAGuard guard(impl_->device);
  impl_->stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/true, impl_->device);
  check(ncclCommInitRank(&impl_->comm, size, id, rank), "ncclCommInitRank");
}

Nccl::~Nccl() = default;

void Nccl::allreduce_sum(const at::Tensor& tensor) {
  c10::cuda::CUDAGuard guard(impl_->device);
  impl_->follow({tensor});  // what the current stream queued (the gradients this bucket holds) comes first
  check(ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), static_cast<std::size_t>(tensor.numel()), nccl_type(tensor),
                      ncclSum, impl_->comm, impl_->stream.stream()),
        "ncclAllReduce");
}

// NCCL's stream starts after what the current stream queued, and the allocator keeps `tensors`'
// memory until NCCL's stream is done with it.
void Nccl::Impl::follow(const std::vector<at::Tensor>& tensors) {
  CudaEvent queued;
  queued.record(c10::cuda::getCurrentCUDAStream(device));
  queued.block(stream);
  for (const auto& t : tensors) c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), stream);
}

void Nccl::allgather(const at::Tensor& mine, const at::Tensor& out) {
  c10::cuda::CUDAGuard guard(impl_->device);
  impl_->follow({mine, out});
  check(ncclAllGather(mine.data_ptr(), out.data_ptr(), static_cast<std::size_t>(mine.numel()), nccl_type(mine),
                      impl_->comm, impl_->stream.stream()),
        "ncclAllGather");
}

void Nccl::reduce_scatter_sum(const at::Tensor& in, const at::Tensor& out, bool accumulate) {
  c10::cuda::CUDAGuard guard(impl_->device);
  impl_->follow({in, out});
  const at::Tensor target = accumulate ? out.new_empty(out.sizes()) : out;
  if (accumulate) c10::cuda::CUDACachingAllocator::recordStream(target.storage().data_ptr(), impl_->stream);
  check(ncclReduceScatter(in.data_ptr(), target.data_ptr(), static_cast<std::size_t>(out.numel()), nccl_type(in),
                          ncclSum, impl_->comm, impl_->stream.stream()),
        "ncclReduceScatter");
  if (accumulate) {
    const c10::cuda::CUDAStreamGuard on_nccl(impl_->stream);  // the sum added in order after the reduction
    out.add_(target);
  }
}

void Nccl::wait() {
  CudaEvent reduced;
  reduced.record(impl_->stream);
  reduced.block(c10::cuda::getCurrentCUDAStream(impl_->device));
}

int64_t Nccl::mark() {
  const int64_t id = impl_->next_mark++;
  impl_->marks[id].record(impl_->stream);
  return id;
}

void Nccl::wait(int64_t mark) {
  const auto it = impl_->marks.find(mark);
  if (it == impl_->marks.end()) return;
  it->second.block(c10::cuda::getCurrentCUDAStream(impl_->device));
  impl_->marks.erase(it);
}

#else

struct Nccl::Impl {};

bool nccl_built() { return false; }

std::string nccl_unique_id() {
  throw std::runtime_error("this baton was built without NCCL (no nccl.h was found; docs/building.md)");
}

Nccl::Nccl(const std::string&, int, int, int) { nccl_unique_id(); }
Nccl::~Nccl() = default;
void Nccl::allreduce_sum(const at::Tensor&) {}
void Nccl::allgather(const at::Tensor&, const at::Tensor&) {}
void Nccl::reduce_scatter_sum(const at::Tensor&, const at::Tensor&, bool) {}
void Nccl::wait() {}
int64_t Nccl::mark() { return 0; }
void Nccl::wait(int64_t) {}

#endif

}  // namespace baton::cuda
