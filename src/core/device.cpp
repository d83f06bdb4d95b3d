#include "baton/core/device.h"

#include <chrono>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "cuda/cuda.h"

namespace baton {
namespace {

[[noreturn]] void bad_device(std::string_view text, const std::string& why) {
  throw std::invalid_argument("'" + std::string(text) + "': " + why);
}

constexpr int kAnyGpu = -1;
constexpr int kNotCuda = -2;

// N of "cuda:N" (a whole number), kAnyGpu for "cuda", kNotCuda for anything else.
int cuda_index(std::string_view text) {
  if (text == "cuda") return kAnyGpu;
  if (text.rfind("cuda:", 0) != 0 || text.size() == 5 || text.size() > 8) return kNotCuda;
  int index = 0;
  for (char c : text.substr(5)) {
    if (c < '0' || c > '9') return kNotCuda;
    index = index * 10 + (c - '0');
  }
  return index;
}

}  // namespace

bool cuda_built() { return cuda::built(); }

int cuda_device_count() { return cuda::device_count(); }

c10::Device parse_device(std::string_view text, int local_rank) {
  if (text == "cpu") return c10::Device(c10::kCPU);
  const int gpus = cuda::device_count();
  if (text == "auto") {
    return gpus > 0 ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(local_rank % gpus))
                    : c10::Device(c10::kCPU);
  }
  const int index = cuda_index(text);
  if (index == kNotCuda) bad_device(text, "unknown device (expected auto, cpu, cuda or cuda:N)");
  if (!cuda::built()) {
    bad_device(text,
               "this baton's LibTorch has no CUDA; use cpu (or auto), or build against a CUDA LibTorch: make "
               "build does when python3's PyTorch has CUDA (pip install torch; docs/building.md)");
  }
  if (gpus == 0) bad_device(text, "this machine has no CUDA device (no GPU or no driver); use cpu (or auto)");
  const int n = index == kAnyGpu ? local_rank % gpus : index;
  if (n >= gpus) {
    bad_device(text, "this machine has " + std::to_string(gpus) + " CUDA device" + (gpus == 1 ? "" : "s") + " (cuda:0" +
                         (gpus == 1 ? "" : " to cuda:" + std::to_string(gpus - 1)) + ")");
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(n));
}

std::string describe(c10::Device device) {
  if (!device.is_cuda()) return device.str();
  return device.str() + " (" + cuda::device_name(device.index()) + ")";
}

bool cuda_supports_bf16(c10::Device device) { return device.is_cuda() && cuda::supports_bf16(device.index()); }

std::string cublas_workspace_problem(const char* value) {
  const std::string v = value == nullptr ? "" : value;
  if (v == ":4096:8" || v == ":16:8") return "";
  return "deterministic cuBLAS needs CUBLAS_WORKSPACE_CONFIG=:4096:8 (or :16:8) from the process's start, "
         "but it is " +
         (value == nullptr ? std::string("unset") : "'" + v + "'") +
         "; set it before the program starts (baton sets it when it loads unless you did)";
}

void synchronize(c10::Device device) {
  if (device.is_cuda()) cuda::synchronize(device.index());
}

std::optional<DeviceMemory> device_memory(c10::Device device) {
  if (!device.is_cuda()) return std::nullopt;
  const cuda::MemoryStats s = cuda::memory_stats(device.index());
  return DeviceMemory{s.allocated, s.reserved, s.peak};
}

void reset_peak_memory(c10::Device device) {
  if (device.is_cuda()) cuda::reset_peak(device.index());
}

// ---- DeviceMarker ---------------------------------------------------------------------------

struct DeviceMarker::Impl {
  std::chrono::steady_clock::time_point host;
  std::unique_ptr<cuda::Event> event;  // on a CUDA device
};

DeviceMarker::DeviceMarker(c10::Device device) : impl_(std::make_unique<Impl>()) {
  if (device.is_cuda()) {
    impl_->event = std::make_unique<cuda::Event>(device.index());
  } else {
    impl_->host = std::chrono::steady_clock::now();
  }
}

DeviceMarker::~DeviceMarker() = default;
DeviceMarker::DeviceMarker(DeviceMarker&&) noexcept = default;
DeviceMarker& DeviceMarker::operator=(DeviceMarker&&) noexcept = default;

bool DeviceMarker::done() const { return !impl_->event || impl_->event->done(); }

double DeviceMarker::seconds_since(const DeviceMarker& earlier) const {
  if (impl_->event && earlier.impl_->event) return impl_->event->seconds_since(*earlier.impl_->event);
  return std::chrono::duration<double>(impl_->host - earlier.impl_->host).count();
}

// ---- OwnStreamScope ---------------------------------------------------------------------------

namespace {

// The streams of scopes that ended, for the next ones: never destroyed, since the allocator records
// an event on each stream a freed tensor was used on, whenever it is freed.
struct FreeStreams {
  std::mutex mutex;
  std::vector<cuda::OwnStream*> streams;
};
FreeStreams& free_streams() {
  static auto* const streams = new FreeStreams;  // outlives every scope, and static destructors
  return *streams;
}

}  // namespace

struct OwnStreamScope::Impl {
  cuda::OwnStream* stream = nullptr;
  std::unique_ptr<cuda::SideStream> on_it;
};

OwnStreamScope::OwnStreamScope(c10::Device device) : impl_(std::make_unique<Impl>()) {
  if (!device.is_cuda()) return;
  const int index = device.has_index() ? device.index() : -1;
  FreeStreams& free = free_streams();
  {
    const std::lock_guard<std::mutex> lock(free.mutex);
    for (auto it = free.streams.begin(); it != free.streams.end(); ++it) {
      if ((*it)->device() == index) {  // (cuda without an index: a new one)
        impl_->stream = *it;
        free.streams.erase(it);
        break;
      }
    }
  }
  if (impl_->stream == nullptr) impl_->stream = new cuda::OwnStream(index);  // NOLINT(cppcoreguidelines-owning-memory)
  impl_->on_it = std::make_unique<cuda::SideStream>(*impl_->stream);
}

OwnStreamScope::~OwnStreamScope() {
  if (impl_->stream == nullptr) return;
  impl_->on_it.reset();
  FreeStreams& free = free_streams();
  const std::lock_guard<std::mutex> lock(free.mutex);
  free.streams.push_back(impl_->stream);
}

int64_t OwnStreamScope::stream_id() const { return impl_->stream ? impl_->stream->id() : 0; }

}  // namespace baton
