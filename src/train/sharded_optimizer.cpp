#include "train/sharded_optimizer.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "baton/optim/optimizers.h"
#include "mpi/comm.h"

namespace baton::detail {
using StateTensors = std::map<std::string, at::Tensor>;

// One parameter group, flattened: its parameters are views into one padded buffer, of which this
// rank's shard is a leaf its optimizer steps in place.
struct ShardedGroup {
  std::vector<at::Tensor> params;
  int64_t length = 0;  // the parameters' elements
  int64_t shard = 0;   // elements a rank holds (length padded to a multiple of the ranks, divided)
  at::Tensor flat;     // every parameter's weights, padded: the parameters are views into it
  at::Tensor mine;     // this rank's block of flat (a view; the local optimizer's parameter)
};

struct ShardedOptimizer::Impl {
  std::shared_ptr<torch::optim::Optimizer> original, local;
  mpi::Comm* comm = nullptr;
  std::vector<ShardedGroup> groups;
  bool grads_sharded = false;  // reduce_scatter_gradients() set the shards' gradients

  int64_t begin(const ShardedGroup& g) const { return g.shard * comm->rank(); }

  // This rank's block of `get(p)` over the group's parameters (zeros where undefined, and in the
  // padding), without building the whole.
  template <typename Get>
  at::Tensor slice(const ShardedGroup& g, Get get) const {
    at::Tensor out = torch::zeros({g.shard}, g.flat.options());
    const int64_t lo = begin(g), hi = lo + g.shard;
    int64_t at = 0;
    for (const auto& p : g.params) {
      const int64_t from = std::max(at, lo), to = std::min(at + p.numel(), hi);
      const at::Tensor t = get(p);
      if (from < to && t.defined())
        out.narrow(0, from - lo, to - from).copy_(t.reshape({-1}).narrow(0, from - at, to - from));
      at += p.numel();
    }
    return out;
  }

  // Every rank's block of `shards` joined (a host round trip for a GPU's): the whole, padded.
  at::Tensor allgather(const at::Tensor& mine) const {
    const at::Tensor host = mine.detach().to(at::kCPU).contiguous();
    at::Tensor all = torch::empty({host.numel() * comm->size()}, host.options());
    comm->allgather(host.data_ptr<float>(), all.data_ptr<float>(), static_cast<std::size_t>(host.numel()));
    return all.to(mine.device());
  }

  // The parameters as views into one buffer a group (again after something gave one new storage:
  // a module moved, an algorithm that set its data), the shards as views into those.
  void flatten() {
    torch::NoGradGuard no_grad;
    for (ShardedGroup& g : groups) {
      bool views = g.flat.defined();
      int64_t at = 0;
      for (const auto& p : g.params) {
        views = views && p.data_ptr<float>() == g.flat.data_ptr<float>() + at;
        at += p.numel();
      }
      if (views) continue;
      at::Tensor flat = torch::zeros({g.shard * comm->size()}, g.params.front().options().requires_grad(false));
      at = 0;
      for (auto& p : g.params) {
        at::Tensor view = flat.narrow(0, at, p.numel()).view(p.sizes());
        view.copy_(p.detach());
        p.set_data(view);
        at += p.numel();
      }
      g.flat = flat;
      const at::Tensor block = flat.narrow(0, begin(g), g.shard);
      if (g.mine.defined()) {
        g.mine.set_data(block);
      } else {
        g.mine = block.detach().requires_grad_(true);
      }
    }
  }

  // The original's state for the group's parameters, cut to this rank's block, into the local
  // optimizer; the original keeps none.
  void take_state(const ShardedGroup& g) {
    std::vector<StateTensors> states;
    states.reserve(g.params.size());
    for (const auto& p : g.params) states.push_back(optimizer_param_state(*original, p));
    const auto first = std::find_if(states.begin(), states.end(), [](const StateTensors& s) { return !s.empty(); });
    StateTensors mine;
    if (first != states.end()) {
      for (const auto& [name, value] : *first) {
        if (name == "step") {
          mine[name] = value.clone();
          continue;
        }
        std::size_t i = 0;
        mine[name] = slice(g, [&](const at::Tensor&) {
          const StateTensors& s = states[i++];
          const auto it = s.find(name);
          return it == s.end() ? at::Tensor() : it->second;
        });
      }
    }
    set_optimizer_param_state(*local, g.mine, mine);
    for (const auto& p : g.params) set_optimizer_param_state(*original, p, {});
  }
};

ShardedOptimizer::ShardedOptimizer(std::shared_ptr<torch::optim::Optimizer> original, mpi::Comm& comm)
    : impl_(std::make_unique<Impl>()) {
  impl_->original = std::move(original);
  impl_->comm = &comm;
  std::vector<std::vector<at::Tensor>> shards;
  for (auto& group : impl_->original->param_groups()) {
    ShardedGroup g;
    g.params = group.params();
    for (const auto& p : g.params) {
      if (p.scalar_type() != torch::kFloat || p.device() != g.params.front().device()) {
        throw std::invalid_argument("sharding: the optimizer's parameters must be float32 on one device, got " +
                                    std::string(c10::toString(p.scalar_type())) + " on " + p.device().str());
      }
      g.length += p.numel();
    }
    g.shard = (g.length + comm.size() - 1) / comm.size();
    impl_->groups.push_back(std::move(g));
  }
  impl_->flatten();
  for (const ShardedGroup& g : impl_->groups) shards.push_back({g.mine});
  impl_->local = make_optimizer_like(*impl_->original, std::move(shards));
  for (const ShardedGroup& g : impl_->groups) impl_->take_state(g);
}

ShardedOptimizer::~ShardedOptimizer() = default;

void ShardedOptimizer::reduce_scatter_gradients(double weight) {
  torch::NoGradGuard no_grad;
  for (ShardedGroup& g : impl_->groups) {
    std::vector<at::Tensor> parts;
    parts.reserve(g.params.size() + 1);
    for (auto& p : g.params) {
      const at::Tensor& grad = p.grad();
      parts.push_back(grad.defined() ? grad.reshape({-1}) : torch::zeros({p.numel()}, p.options()));
    }
    const int64_t padding = g.shard * impl_->comm->size() - g.length;
    if (padding > 0) parts.push_back(torch::zeros({padding}, g.flat.options()));
    at::Tensor whole = torch::cat(parts).to(at::kCPU);
    if (weight != 1.0) whole.mul_(weight);
    for (auto& p : g.params) p.mutable_grad().reset();  // freed: only the shard is kept
    at::Tensor mine = torch::empty({g.shard}, whole.options());
    impl_->comm->reduce_scatter_sum(whole.data_ptr<float>(), mine.data_ptr<float>(), static_cast<std::size_t>(g.shard));
    g.mine.mutable_grad() = mine.to(g.flat.device());
  }
  impl_->grads_sharded = true;
}

std::vector<at::Tensor> ShardedOptimizer::gradient_shards() const {
  std::vector<at::Tensor> out;
  for (const ShardedGroup& g : impl_->groups) {
    if (g.mine.grad().defined()) out.push_back(g.mine.grad());
  }
  return out;
}

void ShardedOptimizer::step() {
  impl_->flatten();
  auto& local_groups = impl_->local->param_groups();
  const auto& given = impl_->original->param_groups();
  for (std::size_t i = 0; i < impl_->groups.size(); ++i) {
    ShardedGroup& g = impl_->groups[i];
    if (!impl_->grads_sharded) g.mine.mutable_grad() = impl_->slice(g, [](const at::Tensor& p) { return p.grad(); });
    local_groups[i].set_options(given[i].options().clone());  // the schedulers' rates of now
  }
  impl_->local->step();  // in place, in this rank's block of each group's buffer
  torch::NoGradGuard no_grad;
  for (ShardedGroup& g : impl_->groups) {
    if (!impl_->grads_sharded) g.mine.mutable_grad().reset();  // the whole gradients are the parameters'
    if (g.flat.is_cpu()) {
      float* flat = g.flat.data_ptr<float>();
      impl_->comm->allgather(flat + impl_->begin(g), flat, static_cast<std::size_t>(g.shard));
    } else {
      g.flat.copy_(impl_->allgather(g.mine));
    }
  }
  impl_->grads_sharded = false;
}

void ShardedOptimizer::gather_state() {
  for (const ShardedGroup& g : impl_->groups) {
    const StateTensors mine = optimizer_param_state(*impl_->local, g.mine);
    std::map<std::string, at::Tensor> whole;
    for (const auto& [name, value] : mine) whole[name] = name == "step" ? value : impl_->allgather(value);
    int64_t at = 0;
    for (const auto& p : g.params) {
      StateTensors state;
      for (const auto& [name, value] : whole) {
        state[name] = name == "step" ? value.clone() : value.narrow(0, at, p.numel()).view(p.sizes()).clone();
      }
      set_optimizer_param_state(*impl_->original, p, state);
      at += p.numel();
    }
  }
}

void ShardedOptimizer::release_gathered() {
  for (const ShardedGroup& g : impl_->groups) {
    for (const auto& p : g.params) set_optimizer_param_state(*impl_->original, p, {});
  }
}

void ShardedOptimizer::reshard() {
  impl_->flatten();
  for (const ShardedGroup& g : impl_->groups) impl_->take_state(g);
}

int64_t ShardedOptimizer::state_bytes() const { return optimizer_state_bytes(*impl_->local); }

std::vector<int64_t> ShardedOptimizer::shard_sizes() const {
  std::vector<int64_t> out;
  out.reserve(impl_->groups.size());
  for (const ShardedGroup& g : impl_->groups) out.push_back(g.shard);
  return out;
}

}  // namespace baton::detail
