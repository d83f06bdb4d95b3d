// src/cuda/cuda.h on a LibTorch without CUDA: no devices, and what needs one says why not.
#include "cuda/cuda.h"

#include <stdexcept>

namespace baton::cuda {
namespace {

[[noreturn]] void no_cuda() {
  throw std::runtime_error(
      "this baton's LibTorch has no CUDA (make build builds against python3's PyTorch with CUDA when "
      "it has one: pip install torch; docs/building.md)");
}

}  // namespace

bool built() { return false; }
int device_count() { return 0; }
std::string device_name(int) { no_cuda(); }
bool supports_bf16(int) { return false; }
void synchronize(int) {}
void set_sync_errors(bool) {}
MemoryStats memory_stats(int) { return {}; }
void reset_peak(int) {}

struct Event::Impl {};
Event::Event(int) { no_cuda(); }
Event::~Event() = default;
bool Event::done() const { return true; }
double Event::seconds_since(const Event&) const { return 0.0; }

struct Transfer::Impl {};
Transfer::Transfer(const std::vector<at::Tensor>&, int) { no_cuda(); }
Transfer::~Transfer() = default;
Transfer::Transfer(Transfer&&) noexcept = default;
Transfer& Transfer::operator=(Transfer&&) noexcept = default;
std::vector<at::Tensor> Transfer::take() { no_cuda(); }

struct OwnStream::Impl {};
OwnStream::OwnStream(int) { no_cuda(); }
OwnStream::~OwnStream() = default;
int OwnStream::device() const { return 0; }
int64_t OwnStream::id() const { return 0; }
int64_t pool_stream_id(int) { no_cuda(); }

void synchronize_stream(int) {}
void use_on_current_stream(const at::Tensor&) { no_cuda(); }

struct SideStream::Impl {};
SideStream::SideStream(const OwnStream&) { no_cuda(); }
SideStream::~SideStream() = default;

struct Graph::Impl {};
Graph::Graph() { no_cuda(); }
Graph::~Graph() = default;
void Graph::capture(const std::function<void()>&) { no_cuda(); }
void Graph::replay() { no_cuda(); }

struct Nccl::Impl {};
bool nccl_built() { return false; }
std::string nccl_unique_id() { no_cuda(); }
Nccl::Nccl(const std::string&, int, int, int) { no_cuda(); }
Nccl::~Nccl() = default;
void Nccl::allreduce_sum(const at::Tensor&) { no_cuda(); }
void Nccl::allgather(const at::Tensor&, const at::Tensor&) { no_cuda(); }
void Nccl::reduce_scatter_sum(const at::Tensor&, const at::Tensor&, bool) { no_cuda(); }
void Nccl::wait() {}
int64_t Nccl::mark() { return 0; }
void Nccl::wait(int64_t) {}

}  // namespace baton::cuda
