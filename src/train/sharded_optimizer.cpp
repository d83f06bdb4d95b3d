#include "train/sharded_optimizer.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "baton/models/checkpointing.h"
#include "baton/optim/optimizers.h"
#include "cuda/cuda.h"
#include "mpi/comm.h"

namespace baton::detail {

using StateTensors = std::map<std::string, at::Tensor>;

// Parameters of one optimizer group (and under full sharding of one unit), flattened: they are views
// into one padded buffer, of which each rank holds a shard.
struct ShardedChunk {
  std::vector<at::Tensor> params;
  std::size_t group = 0;      // the optimizer's parameter group
  int unit = -1;              // the unit (full sharding), or -1: none, and the buffer is always whole
  int64_t length = 0;         // the parameters' elements
  int64_t shard = 0;          // elements a rank holds (length padded to a multiple of the ranks, divided)
  at::Tensor flat;            // the whole buffer; a unit's has storage only while gathered
  at::Tensor mine;            // this rank's shard, a leaf the local optimizer steps: a view of flat, or
                              // a unit's own tensor
  bool gathered = true;       // the buffer has its storage (and, unless in_flight, the whole values)
  bool in_flight = false;     // NCCL's gather was started and not waited for
  int64_t gathered_mark = 0;  // NCCL's mark after it
  bool fresh_grad = true;     // the shard's gradient is the last step's: the next reduction replaces it
  bool rounded = false;       // gathered in the compute precision: the buffer holds the shards rounded
  at::Tensor low;             // NCCL's gather in the compute precision, copied into flat when waited for
};

namespace {

// Gives a tensor's storage `bytes` of new memory (0: frees it), keeping the storage itself: every
// view of it (the parameters, what autograd saved of them) sees the new memory.
void set_storage_bytes(const at::Tensor& t, std::size_t bytes) {
  c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  if (storage->nbytes() == bytes) return;
  const c10::DeviceGuard on(t.device());  // a GPU's allocator allocates on the current device
  storage->set_data_ptr_noswap(storage->allocator()->allocate(bytes));
  storage->set_nbytes(bytes);
}

}  // namespace

struct ShardedOptimizer::Impl {
  std::shared_ptr<torch::optim::Optimizer> original, local;
  mpi::Comm* comm = nullptr;
  cuda::Nccl* nccl = nullptr;  // a GPU run's collectives on the device (else MPI on the host)
  std::vector<ShardedChunk> chunks;
  std::vector<std::vector<std::size_t>> unit_chunks;  // per unit: its chunks
  bool offload = false;                               // the shards (and the state) in host memory
  double weight = 1.0;                                // this rank's share of the global batch
  bool grads_sharded = false;                         // the whole chunks' gradients were reduce-scattered this step
  double wait_s = 0.0;                                // the host waited for units' gathers
  at::ScalarType compute = at::kFloat;                // what units are gathered in for their passes
  int64_t gathered_bytes = 0;                         // the units' gathers' bytes (every rank's blocks)

  // NCCL's collectives are on the device: the work the current stream queues next waits for them.
  bool on_device(const ShardedChunk& c) const { return nccl != nullptr && c.flat.is_cuda(); }
  void settle() const {
    if (nccl != nullptr) nccl->wait();
  }

  int64_t begin(const ShardedChunk& c) const { return c.shard * comm->rank(); }

  // This rank's block of `get(p)` over the chunk's parameters (zeros where undefined, and in the
  // padding), without building the whole.
  template <typename Get>
  at::Tensor slice(const ShardedChunk& c, Get get) const {
    at::Tensor out = torch::zeros({c.shard}, c.flat.options());
    const int64_t lo = begin(c), hi = lo + c.shard;
    int64_t at = 0;
    for (const auto& p : c.params) {
      const int64_t from = std::max(at, lo), to = std::min(at + p.numel(), hi);
      const at::Tensor t = get(p);
      if (from < to && t.defined())
        out.narrow(0, from - lo, to - from).copy_(t.reshape({-1}).narrow(0, from - at, to - from));
      at += p.numel();
    }
    return out;
  }

  // Every rank's block joined (a host round trip for a GPU's): the whole, padded. float32, or the
  // 16-bit values of a compute precision.
  at::Tensor allgather(const at::Tensor& mine) const {
    const at::Tensor host = mine.detach().to(at::kCPU).contiguous();
    at::Tensor all = torch::empty({host.numel() * comm->size()}, host.options());
    const auto n = static_cast<std::size_t>(host.numel());
    if (host.element_size() == 2) {
      comm->allgather(static_cast<const std::uint16_t*>(host.data_ptr()), static_cast<std::uint16_t*>(all.data_ptr()),
                      n);
    } else {
      comm->allgather(host.data_ptr<float>(), all.data_ptr<float>(), n);
    }
    return all.to(mine.device());
  }

  // Every rank's block joined on rank 0 (undefined on the others).
  at::Tensor gather_to_root(const at::Tensor& mine) const {
    const at::Tensor host = mine.detach().to(at::kCPU).contiguous();
    const bool root = comm->rank() == 0;
    at::Tensor all = torch::empty({root ? host.numel() * comm->size() : 0}, host.options());
    comm->gather(host.data_ptr<float>(), all.data_ptr<float>(), static_cast<std::size_t>(host.numel()));
    return root ? all.to(mine.device()) : at::Tensor();
  }

  // The chunk's parameters as views into a new buffer holding their values; its shard a view too
  // for a whole chunk, a copy for a unit's.
  void flatten(ShardedChunk& c) {
    torch::NoGradGuard no_grad;
    at::Tensor flat = torch::zeros({c.shard * comm->size()}, c.params.front().options().requires_grad(false));
    int64_t at = 0;
    for (auto& p : c.params) {
      at::Tensor view = flat.narrow(0, at, p.numel()).view(p.sizes());
      view.copy_(p.detach());
      p.set_data(view);
      at += p.numel();
    }
    c.flat = flat;
    c.gathered = true;
    const at::Tensor block = flat.narrow(0, begin(c), c.shard);
    const at::Tensor value = offload      ? block.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true)
                             : c.unit < 0 ? block
                                          : block.clone();
    if (c.mine.defined()) {
      c.mine.set_data(value);
    } else {
      c.mine = value.detach().requires_grad_(true);
    }
  }

  // A whole chunk whose parameters something gave storage of their own again (a module moved, an
  // algorithm that set their data) is flattened again.
  void keep_flat(ShardedChunk& c) {
    int64_t at = 0;
    bool views = true;
    for (const auto& p : c.params) {
      views = views && p.data_ptr<float>() == c.flat.data_ptr<float>() + at;
      at += p.numel();
    }
    if (!views) flatten(c);
  }

  // A unit's chunk's storage back and every rank's shard gathered into it: for a pass in the compute
  // precision (the shards rounded to it: half the bytes under amp_bf16; the parameters stay float32,
  // and autocast's casts of them are exact), `exact` in float32. NCCL's gather runs on its stream,
  // and the host goes on (`ahead`: a prefetch while another unit computes). Through MPI the host
  // waits: Open MPI moves a host buffer's collective on only inside MPI calls, so a prefetch there
  // would hold the memory and hide nothing; a prefetch starts nothing.
  void start_gather(ShardedChunk& c, bool ahead, bool exact = false) {
    if (c.gathered || (ahead && !on_device(c))) return;
    set_storage_bytes(c.flat, static_cast<std::size_t>(c.flat.numel()) * sizeof(float));
    c.gathered = true;
    torch::NoGradGuard no_grad;
    const at::ScalarType dtype = exact ? at::kFloat : compute;
    c.rounded = dtype != at::kFloat;
    gathered_bytes += c.flat.numel() * static_cast<int64_t>(c10::elementSize(dtype));
    if (on_device(c)) {
      c.low = c.rounded ? torch::empty({c.flat.numel()}, c.flat.options().dtype(dtype)) : at::Tensor();
      nccl->allgather(c.mine.detach().to(c.flat.device(), dtype), c.rounded ? c.low : c.flat);
      c.gathered_mark = nccl->mark();
      c.in_flight = true;
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    if (c.flat.is_cpu() && !c.rounded) {
      comm->allgather(c.mine.data_ptr<float>(), c.flat.data_ptr<float>(), static_cast<std::size_t>(c.shard));
    } else {
      c.flat.copy_(allgather(c.mine.detach().to(dtype)));  // staged through host memory for a GPU's
    }
    wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // The current stream waits (on the device) for NCCL's gather of the chunk (not for the reductions
  // started after it).
  void finish_gather(ShardedChunk& c) {
    if (!c.in_flight) return;
    nccl->wait(c.gathered_mark);
    c.in_flight = false;
    if (!c.low.defined()) return;
    torch::NoGradGuard no_grad;
    c.flat.copy_(c.low);
    c.low = at::Tensor();
  }

  void gather(ShardedChunk& c, bool exact = false) {
    start_gather(c, /*ahead=*/false, exact);
    finish_gather(c);
  }

  void free(ShardedChunk& c) {
    if (!c.gathered || c.unit < 0) return;
    finish_gather(c);  // its buffer must outlive the collective
    set_storage_bytes(c.flat, 0);
    c.gathered = false;
    c.rounded = false;
  }

  // Every rank's gradients of the chunk times its weight summed into the owners' shards (added to
  // what earlier microbatches of this step gave); the parameters' own freed.
  void reduce(ShardedChunk& c) {
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> parts;
    parts.reserve(c.params.size() + 1);
    for (auto& p : c.params) {
      const at::Tensor& grad = p.grad();
      parts.push_back(grad.defined() ? grad.reshape({-1}) : torch::zeros({p.numel()}, c.flat.options()));
    }
    const int64_t padding = c.shard * comm->size() - c.length;
    if (padding > 0) parts.push_back(torch::zeros({padding}, c.flat.options()));
    const bool device = on_device(c) && c.mine.is_cuda();
    at::Tensor whole = device ? torch::cat(parts) : torch::cat(parts).to(at::kCPU);
    if (weight != 1.0) whole.mul_(weight);
    for (auto& p : c.params) p.mutable_grad().reset();
    const bool accumulate = !c.fresh_grad && c.mine.grad().defined();
    c.fresh_grad = false;
    if (device) {  // on NCCL's stream; the step and clipping wait for it (settle)
      if (!accumulate) c.mine.mutable_grad() = torch::empty({c.shard}, c.mine.options().requires_grad(false));
      nccl->reduce_scatter_sum(whole, c.mine.grad(), accumulate);
      return;
    }
    at::Tensor sum = torch::empty({c.shard}, whole.options());
    comm->reduce_scatter_sum(whole.data_ptr<float>(), sum.data_ptr<float>(), static_cast<std::size_t>(c.shard));
    sum = sum.to(c.mine.device());
    if (accumulate) {
      c.mine.mutable_grad().add_(sum);
    } else {
      c.mine.mutable_grad() = sum;
    }
  }

  // The original's state for the chunk's parameters, cut to this rank's block, into the local
  // optimizer; the original keeps none.
  void take_state(const ShardedChunk& c) {
    std::vector<StateTensors> states;
    states.reserve(c.params.size());
    for (const auto& p : c.params) states.push_back(optimizer_param_state(*original, p));
    const auto first = std::find_if(states.begin(), states.end(), [](const StateTensors& s) { return !s.empty(); });
    StateTensors mine;
    if (first != states.end()) {
      for (const auto& entry : *first) {
        const std::string& name = entry.first;
        if (name == "step") {
          mine[name] = entry.second.clone();
          continue;
        }
        std::size_t i = 0;
        mine[name] = slice(c, [&](const at::Tensor&) {
                       const StateTensors& s = states[i++];
                       const auto it = s.find(name);
                       return it == s.end() ? at::Tensor() : it->second;
                     }).to(c.mine.device());  // where the shard lives (host memory with offload)
      }
    }
    set_optimizer_param_state(*local, c.mine, mine);
    for (const auto& p : c.params) set_optimizer_param_state(*original, p, {});
  }

  // The chunks of each group: one a unit its parameters fall in, one for the rest.
  void cut(const std::vector<std::vector<at::Tensor>>& units) {
    std::unordered_map<const void*, int> unit_of;
    for (std::size_t u = 0; u < units.size(); ++u) {
      for (const auto& p : units[u]) unit_of[p.unsafeGetTensorImpl()] = static_cast<int>(u);
    }
    unit_chunks.assign(units.size(), {});
    const auto& groups = original->param_groups();
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      std::map<int, ShardedChunk> by_unit;  // -1 (no unit) first
      for (const auto& p : groups[gi].params()) {
        if (p.scalar_type() != torch::kFloat || p.device() != groups[gi].params().front().device()) {
          throw std::invalid_argument("sharding: the optimizer's parameters must be float32 on one device, got " +
                                      std::string(c10::toString(p.scalar_type())) + " on " + p.device().str());
        }
        const auto it = unit_of.find(p.unsafeGetTensorImpl());
        ShardedChunk& c = by_unit[it == unit_of.end() ? -1 : it->second];
        c.params.push_back(p);
        c.length += p.numel();
      }
      for (auto& [unit, c] : by_unit) {
        c.group = gi;
        c.unit = unit;
        c.shard = (c.length + comm->size() - 1) / comm->size();
        if (unit >= 0) unit_chunks[static_cast<std::size_t>(unit)].push_back(chunks.size());
        chunks.push_back(std::move(c));
      }
    }
  }
};

namespace {

// What runs around a unit's passes, as functions.
class FunctionHooks : public UnitHooks {
 public:
  using Hook = std::function<void()>;
  FunctionHooks(Hook forward_gather, Hook free, Hook backward_gather, Hook reduce_and_free)
      : forward_gather_(std::move(forward_gather)),
        free_(std::move(free)),
        backward_gather_(std::move(backward_gather)),
        reduce_and_free_(std::move(reduce_and_free)) {}
  void before_forward() override { forward_gather_(); }
  void after_forward() override { free_(); }
  void before_backward() override { backward_gather_(); }
  void after_backward() override { reduce_and_free_(); }

 private:
  Hook forward_gather_, free_, backward_gather_, reduce_and_free_;
};

}  // namespace

ShardedOptimizer::ShardedOptimizer(std::shared_ptr<torch::optim::Optimizer> original, mpi::Comm& comm, cuda::Nccl* nccl,
                                   const std::vector<std::vector<at::Tensor>>& units, bool offload,
                                   at::ScalarType compute)
    : impl_(std::make_shared<Impl>()) {
  if (compute != at::kFloat && compute != at::kBFloat16 && compute != at::kHalf) {
    throw std::invalid_argument("sharding: units are gathered in float32, bfloat16 or float16, not " +
                                std::string(c10::toString(compute)));
  }
  impl_->compute = compute;
  impl_->original = std::move(original);
  impl_->comm = &comm;
  impl_->nccl = nccl;
  impl_->offload = offload;
  impl_->cut(units);
  std::vector<std::vector<at::Tensor>> shards(impl_->original->param_groups().size());
  for (ShardedChunk& c : impl_->chunks) {
    impl_->flatten(c);
    shards[c.group].push_back(c.mine);
  }
  impl_->local = make_optimizer_like(*impl_->original, std::move(shards));
  for (const ShardedChunk& c : impl_->chunks) impl_->take_state(c);
}

ShardedOptimizer::~ShardedOptimizer() = default;

// A unit's chunks gathered around its forward and backward (the next unit's gather started as this
// one computes: the one after it in forward, the one before it in backward), its gradients reduced
// after backward.
std::shared_ptr<UnitHooks> ShardedOptimizer::unit_hooks(std::size_t i) {
  const std::shared_ptr<Impl> impl = impl_;
  auto each = [impl](std::size_t unit, auto f) {
    if (unit >= impl->unit_chunks.size()) return;
    for (const std::size_t c : impl->unit_chunks[unit]) f(*impl, impl->chunks[c]);
  };
  const auto gather = [each](std::size_t unit, std::size_t next) {
    each(unit, [](Impl& s, ShardedChunk& c) { s.gather(c); });
    each(next, [](Impl& s, ShardedChunk& c) { s.start_gather(c, /*ahead=*/true); });
  };
  return std::make_shared<FunctionHooks>([gather, i] { gather(i, i + 1); },
                                         [each, i] { each(i, [](Impl& s, ShardedChunk& c) { s.free(c); }); },
                                         [gather, i] { gather(i, i - 1); },  // i - 1 wraps past the last: none
                                         [each, i] {
                                           each(i, [](Impl& s, ShardedChunk& c) {
                                             s.reduce(c);
                                             s.free(c);
                                           });
                                         });
}

void ShardedOptimizer::set_gradient_weight(double weight) { impl_->weight = weight; }

void ShardedOptimizer::idle_microbatch() {
  auto& chunks = impl_->chunks;
  for (const auto& unit : impl_->unit_chunks) {
    for (const std::size_t i : unit) impl_->gather(chunks[i]);
    for (const std::size_t i : unit) impl_->free(chunks[i]);
  }
  for (auto unit = impl_->unit_chunks.rbegin(); unit != impl_->unit_chunks.rend(); ++unit) {
    for (const std::size_t i : *unit) {
      impl_->gather(chunks[i]);
      impl_->reduce(chunks[i]);  // no gradients here: zeros
      impl_->free(chunks[i]);
    }
  }
}

void ShardedOptimizer::gather_parameters() {
  for (ShardedChunk& c : impl_->chunks) {
    if (c.rounded) impl_->free(c);  // a pass's values: the exact ones instead
    impl_->gather(c, /*exact=*/true);
  }
}

void ShardedOptimizer::shard_parameters() {
  torch::NoGradGuard no_grad;
  for (ShardedChunk& c : impl_->chunks) {
    if (c.unit < 0 || !c.gathered) continue;
    impl_->finish_gather(c);
    if (!c.rounded) c.mine.copy_(c.flat.narrow(0, impl_->begin(c), c.shard));  // the whole weights may have changed
    impl_->free(c);
  }
}

bool ShardedOptimizer::parameters_sharded() const {
  return std::any_of(impl_->chunks.begin(), impl_->chunks.end(), [](const ShardedChunk& c) { return !c.gathered; });
}

void ShardedOptimizer::reduce_scatter_gradients() {
  for (ShardedChunk& c : impl_->chunks) {
    if (c.unit < 0) impl_->reduce(c);
  }
  impl_->grads_sharded = true;
}

std::vector<at::Tensor> ShardedOptimizer::gradient_shards() const {
  impl_->settle();
  std::vector<at::Tensor> out;
  for (const ShardedChunk& c : impl_->chunks) {
    if (c.mine.grad().defined()) out.push_back(c.mine.grad());
  }
  return out;
}

void ShardedOptimizer::step() {
  impl_->settle();
  auto& local_groups = impl_->local->param_groups();
  const auto& given = impl_->original->param_groups();
  for (ShardedChunk& c : impl_->chunks) {
    if (c.unit >= 0) continue;  // a unit's gradient is reduced in its backward
    impl_->keep_flat(c);
    if (!impl_->grads_sharded) {
      c.mine.mutable_grad() = impl_->slice(c, [](const at::Tensor& p) { return p.grad(); }).to(c.mine.device());
    }
  }
  for (std::size_t i = 0; i < local_groups.size(); ++i) {
    local_groups[i].set_options(given[i].options().clone());  // the schedulers' rates of now
  }
  impl_->local->step();  // in place: in the whole chunks' buffers, in the units' shards
  torch::NoGradGuard no_grad;
  for (ShardedChunk& c : impl_->chunks) {
    c.fresh_grad = true;
    if (c.unit >= 0) continue;                                 // gathered before its next forward
    if (!impl_->grads_sharded) c.mine.mutable_grad().reset();  // the whole gradients are the parameters'
    if (c.flat.is_cpu() && !impl_->offload) {  // the shard is a view of the buffer: all-gathered in place
      float* flat = c.flat.data_ptr<float>();
      impl_->comm->allgather(flat + impl_->begin(c), flat, static_cast<std::size_t>(c.shard));
    } else if (impl_->on_device(c)) {
      impl_->nccl->allgather(c.mine.is_cuda() ? c.mine.detach() : c.mine.detach().to(c.flat.device()), c.flat);
    } else {
      c.flat.copy_(impl_->allgather(c.mine));
    }
  }
  impl_->grads_sharded = false;
  impl_->settle();
}

void ShardedOptimizer::gather_state() {
  for (const ShardedChunk& c : impl_->chunks) {
    const StateTensors mine = optimizer_param_state(*impl_->local, c.mine);
    std::map<std::string, at::Tensor> whole;
    for (const auto& [name, value] : mine) whole[name] = name == "step" ? value : impl_->gather_to_root(value);
    if (impl_->comm->rank() != 0) continue;  // rank 0 writes the checkpoint
    int64_t at = 0;
    for (const auto& p : c.params) {
      StateTensors state;
      for (const auto& [name, value] : whole) {
        state[name] = name == "step" ? value.clone() : value.narrow(0, at, p.numel()).view(p.sizes()).clone();
      }
      set_optimizer_param_state(*impl_->original, p, state);
      at += p.numel();
    }
  }
}

std::vector<ShardedOptimizer::ChunkState> ShardedOptimizer::shard_state() const {
  std::vector<ChunkState> out;
  out.reserve(impl_->chunks.size());
  for (const ShardedChunk& c : impl_->chunks) {
    // A unit's shard is its values; a whole chunk's parameters are (an algorithm may have set them).
    const at::Tensor weights = c.unit >= 0 ? c.mine : impl_->slice(c, [](const at::Tensor& p) { return p; });
    out.push_back({c.params, c.shard, weights.detach(), optimizer_param_state(*impl_->local, c.mine)});
  }
  return out;
}

void ShardedOptimizer::load_state(const StateSource& source, const std::map<const void*, std::string>& names) {
  for (const ShardedChunk& c : impl_->chunks) {
    std::vector<std::string> params;
    for (const auto& p : c.params) params.push_back(names.at(p.unsafeGetTensorImpl()));
    const std::vector<std::string> states = source.states(params.front());
    if (states.empty()) continue;
    StateTensors mine;
    const int64_t lo = impl_->begin(c), hi = lo + c.shard;
    for (const auto& state : states) {
      if (state == "step") {
        mine[state] = source.read(params.front(), state, 0, 1);
        continue;
      }
      at::Tensor block = torch::zeros({c.shard}, c.mine.options().requires_grad(false));
      int64_t at = 0;
      for (std::size_t i = 0; i < params.size(); ++i) {  // the parameters' parts in this rank's block
        const int64_t from = std::max(at, lo), to = std::min(at + c.params[i].numel(), hi);
        if (from < to) block.narrow(0, from - lo, to - from).copy_(source.read(params[i], state, from - at, to - from));
        at += c.params[i].numel();
      }
      mine[state] = block;
    }
    set_optimizer_param_state(*impl_->local, c.mine, mine);
  }
}

std::vector<at::Tensor> ShardedOptimizer::parameters() const {
  std::vector<at::Tensor> out;
  for (const ShardedChunk& c : impl_->chunks) out.insert(out.end(), c.params.begin(), c.params.end());
  return out;
}

void ShardedOptimizer::release_gathered() {
  for (const ShardedChunk& c : impl_->chunks) {
    for (const auto& p : c.params) set_optimizer_param_state(*impl_->original, p, {});
  }
}

void ShardedOptimizer::reshard() {
  torch::NoGradGuard no_grad;
  for (ShardedChunk& c : impl_->chunks) {
    if (c.unit < 0) {
      impl_->keep_flat(c);
    } else if (c.gathered && !c.rounded) {
      impl_->finish_gather(c);
      c.mine.copy_(c.flat.narrow(0, impl_->begin(c), c.shard));
    }
    impl_->take_state(c);
  }
}

double ShardedOptimizer::wait_seconds() const { return impl_->wait_s; }

int64_t ShardedOptimizer::gathered_bytes() const { return impl_->gathered_bytes; }

int64_t ShardedOptimizer::state_bytes() const { return optimizer_state_bytes(*impl_->local); }

int64_t ShardedOptimizer::parameter_bytes() const {
  int64_t bytes = 0;
  for (const ShardedChunk& c : impl_->chunks) {
    const int64_t whole = c.gathered ? c.length : 0;
    bytes += (whole + (c.unit >= 0 ? c.shard : 0)) * static_cast<int64_t>(sizeof(float));
  }
  return bytes;
}

std::vector<int64_t> ShardedOptimizer::shard_sizes() const {
  std::vector<int64_t> out;
  out.reserve(impl_->chunks.size());
  for (const ShardedChunk& c : impl_->chunks) out.push_back(c.shard);
  return out;
}

}  // namespace baton::detail
