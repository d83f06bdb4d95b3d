#include "train/sharded_optimizer.h"

#include <stdexcept>
#include <string>

#include "baton/optim/optimizers.h"
#include "mpi/comm.h"

namespace baton::detail {

// One parameter group, flattened: its parameters in order, this rank's shard of them.
struct ShardedGroup {
  std::vector<at::Tensor> params;
  int64_t length = 0;  // the parameters' elements
  int64_t shard = 0;   // elements a rank holds (length padded to a multiple of the ranks, divided)
  at::Tensor mine;     // this rank's shard: a leaf its optimizer steps
};

struct ShardedOptimizer::Impl {
  std::shared_ptr<torch::optim::Optimizer> original, local;
  mpi::Comm* comm = nullptr;
  std::vector<ShardedGroup> groups;

  // The group's `what` (parameters, or their gradients: zeros where none) as one padded vector.
  at::Tensor flat(const ShardedGroup& g, bool grads) const {
    std::vector<at::Tensor> parts;
    parts.reserve(g.params.size() + 1);
    for (const auto& p : g.params) {
      const at::Tensor& t = grads ? p.grad() : p;
      parts.push_back(t.defined() ? t.detach().reshape({-1}) : torch::zeros({p.numel()}, p.options()));
    }
    const int64_t padding = g.shard * comm->size() - g.length;
    if (padding > 0) parts.push_back(torch::zeros({padding}, torch::kFloat));
    return torch::cat(parts);
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
      if (p.scalar_type() != torch::kFloat || !p.device().is_cpu()) {
        throw std::invalid_argument("sharding: the optimizer's parameters must be float32 on the CPU, got " +
                                    std::string(c10::toString(p.scalar_type())) + " on " + p.device().str());
      }
      g.length += p.numel();
    }
    g.shard = (g.length + comm.size() - 1) / comm.size();
    g.mine = impl_->flat(g, false).narrow(0, g.shard * comm.rank(), g.shard).clone().requires_grad_(true);
    shards.push_back({g.mine});
    impl_->groups.push_back(std::move(g));
  }
  impl_->local = make_optimizer_like(*impl_->original, std::move(shards));
}

ShardedOptimizer::~ShardedOptimizer() = default;

void ShardedOptimizer::step() {
  auto& local_groups = impl_->local->param_groups();
  const auto& given = impl_->original->param_groups();
  const int rank = impl_->comm->rank();
  for (std::size_t i = 0; i < impl_->groups.size(); ++i) {
    ShardedGroup& g = impl_->groups[i];
    g.mine.mutable_grad() = impl_->flat(g, true).narrow(0, g.shard * rank, g.shard).clone();
    local_groups[i].set_options(given[i].options().clone());  // the schedulers' rates of now
  }
  impl_->local->step();
  torch::NoGradGuard no_grad;
  for (ShardedGroup& g : impl_->groups) {
    at::Tensor all = torch::empty({g.shard * impl_->comm->size()}, torch::kFloat);
    const at::Tensor mine = g.mine.detach().contiguous();
    impl_->comm->allgather(mine.data_ptr<float>(), all.data_ptr<float>(), static_cast<std::size_t>(g.shard));
    int64_t at = 0;
    for (auto& p : g.params) {
      p.copy_(all.narrow(0, at, p.numel()).view(p.sizes()));
      at += p.numel();
    }
  }
}

int64_t ShardedOptimizer::state_bytes() const { return optimizer_state_bytes(*impl_->local); }

std::vector<int64_t> ShardedOptimizer::shard_sizes() const {
  std::vector<int64_t> out;
  out.reserve(impl_->groups.size());
  for (const ShardedGroup& g : impl_->groups) out.push_back(g.shard);
  return out;
}

}  // namespace baton::detail
