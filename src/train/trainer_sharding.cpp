// Sharded data parallelism in the Trainer (TrainerOptions::sharding; docs/distributed.md,
// "Sharding"): the refusals, each optimizer's shards, and the gradients' reduction into them.
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "baton/models/checkpointing.h"
#include "baton/models/surgery.h"
#include "baton/train/checkpoint.h"
#include "baton/train/trainer.h"
#include "mpi/comm.h"
#include "train/data_parallel.h"
#include "train/sharded_checkpoint.h"
#include "train/sharded_optimizer.h"
#include "train/trainer_impl.h"
#include "train/trainer_internal.h"

namespace baton {

using detail::require;

// After init (the algorithms are all there): what sharding cannot work with, refused by name.
void Trainer::Impl::check_sharding() {
  const Sharding sharding = options_.sharding();
  require(!options_.offload_optimizer() || state_.device.is_cuda(),
          "TrainerOptions: offload: the run is on the CPU, where the optimizer's state already is; offload moves a GPU "
          "run's to host memory (remove it)");
  require(!options_.offload_optimizer() || sharding != Sharding::kNone,
          "TrainerOptions: offload: the optimizer's state is offloaded in its shards; set sharding: optimizer, "
          "gradients or full");
  if (sharding == Sharding::kNone) return;
  const std::string level = "sharding: " + to_name(sharding);
  if (!ddp_) {
    spdlog::warn(
        "{} does nothing in a single process: there are no ranks to shard over (start the run with "
        "mpirun -n N; this one trains unsharded)",
        level);
    return;
  }
  const std::string fix = "; remove it or set sharding: none";
  require(options_.precision() != Precision::kAmpFp16,
          "TrainerOptions: " + level +
              ": amp_fp16's loss scaler checks whole gradients; use precision amp_bf16 or fp32, or sharding: none");
  const auto refuse_blocked = [&](const char* what, const std::string& name, const std::string& why) {
    if (why.empty()) return;
    throw std::invalid_argument(std::string("TrainerOptions: ")
                                    .append(level)
                                    .append(": ")
                                    .append(what)
                                    .append(" '")
                                    .append(name)
                                    .append("' ")
                                    .append(why)
                                    .append(fix));
  };
  for (const auto& a : state_.algorithms) refuse_blocked("algorithm", a->name(), a->sharding_blocker(sharding));
  for (const auto& c : state_.callbacks) refuse_blocked("callback", c->name(), c->sharding_blocker(sharding));
  require(sharding != Sharding::kFull || state_.optimizers.size() == 1,
          "TrainerOptions: sharding: full takes one optimizer (this run has " +
              std::to_string(state_.optimizers.size()) + "); put the parameter groups in one");
  state_.sharding = sharding;
}

// Each optimizer's state cut over the ranks, taking what a checkpoint loaded; under full sharding
// the units (shard_unit) hooked to gather their parameters; with sharded gradients, what algorithms
// that scale gradients work on.
void Trainer::Impl::setup_sharding() {
  if (state_.sharding == Sharding::kNone) return;
  std::vector<std::pair<Replaceable*, std::string>> slots;
  std::vector<std::vector<at::Tensor>> units;
  if (state_.sharding == Sharding::kFull) {
    for_each_unit(*state_.model, options_.shard_unit(), "TrainerOptions: shard_unit",
                  [&](Replaceable& owner, const std::string& slot) {
                    slots.emplace_back(&owner, slot);
                    units.push_back(owner.slot(slot).ptr()->parameters());
                  });
  }
  for (const auto& optimizer : state_.optimizers) {
    try {
      sharded_.push_back(std::make_unique<detail::ShardedOptimizer>(
          optimizer, mpi::Comm::world(), ddp_->nccl(), units, options_.offload_optimizer(),
          compute_dtype(state_.precision)));  // the units gathered in the run's precision
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("TrainerOptions: ") + e.what());
    }
  }
  for (std::size_t i = 0; i < slots.size(); ++i)
    slots[i].first->set_unit_hooks(slots[i].second, sharded_[0]->unit_hooks(i));
  load_shard_states();
  if (sharded_gradients()) {
    state_.gradient_shards = [this] {
      std::vector<at::Tensor> all;
      for (const auto& s : sharded_) {
        for (auto& g : s->gradient_shards()) all.push_back(g);
      }
      return all;
    };
    state_.sum_over_ranks = [this](const at::Tensor& value) { return ddp_->allreduce(value); };
  }
  const std::string what =
      state_.sharding == Sharding::kFull
          ? ", of the averaged gradients and of the parameters of " + std::to_string(slots.size()) + " units"
      : state_.sharding == Sharding::kGradients ? " and of the averaged gradients"
                                                : "";
  spdlog::info("sharding: {}: each of {} ranks holds 1/{} of the optimizer's state{}", to_name(state_.sharding),
               ddp_->size(), ddp_->size(), what);
}

// A sharded checkpoint's optimizer state, each rank reading its blocks from the files that hold them.
void Trainer::Impl::load_shard_states() {
  if (!pending_shards_ || sharded_.empty()) return;
  std::map<const void*, std::string> names;
  for (const auto& p : state_.model->named_parameters()) names[p.value().unsafeGetTensorImpl()] = p.key();
  const std::shared_ptr<detail::ShardedCheckpoint> shards = std::move(pending_shards_);
  for (std::size_t o = 0; o < sharded_.size(); ++o) {
    const auto find = [shards, o](const std::string& param) {
      const auto it = shards->params().find({static_cast<int>(o), param});
      return it == shards->params().end() ? nullptr : &it->second;
    };
    detail::ShardedOptimizer::StateSource source;
    source.states = [find, shards](const std::string& param) {
      const auto* p = find(param);
      return p == nullptr ? std::vector<std::string>{} : shards->states(*p);
    };
    source.read = [find, shards](const std::string& param, const std::string& state, int64_t start, int64_t n) {
      const auto* p = find(param);
      if (p == nullptr) throw CheckpointError("a sharded checkpoint holds no optimizer state for '" + param + "'");
      return shards->read(*p, state, start, n);
    };
    sharded_[o]->load_state(source, names);
  }
}

bool Trainer::Impl::sharded_gradients() const {
  return state_.sharding == Sharding::kGradients || state_.sharding == Sharding::kFull;
}

void Trainer::Impl::reduce_gradients(double weight, bool find_unused) {
  if (sharded_gradients()) {
    for (const auto& s : sharded_) {
      s->set_gradient_weight(weight);
      s->reduce_scatter_gradients();
    }
    return;
  }
  ddp_->arm(weight, find_unused);
  ddp_->finish();
}

// Full sharding, before a batch's microbatches: the most any rank has (each unit's collectives run
// once a microbatch on every rank).
int64_t Trainer::Impl::most_microbatches(int64_t microbatches) {
  const auto size = static_cast<std::size_t>(ddp_->size());
  std::vector<double> counts(size, 0.0);
  counts[static_cast<std::size_t>(ddp_->rank())] = static_cast<double>(microbatches);
  counts = ddp_->allreduce(counts);
  return static_cast<int64_t>(*std::max_element(counts.begin(), counts.end()));
}

// Full sharding, after them: a rank with fewer microbatches than `most` (a short last batch) takes
// part in the units' collectives of those it lacks, then every rank reduces the gradients of the
// parameters of no unit.
void Trainer::Impl::finish_full_sharding(int64_t microbatches, int64_t most) {
  for (int64_t i = microbatches; i < most; ++i) {
    for (const auto& s : sharded_) s->idle_microbatch();
  }
  reduce_gradients(ddp_weight_, /*find_unused=*/false);
}

// Full sharding: `f` (an evaluation, a checkpoint's snapshot) sees the units' parameters whole;
// sharded again after when they were.
void Trainer::Impl::with_whole_parameters(const std::function<void()>& f) const {
  const bool sharded =
      std::any_of(sharded_.begin(), sharded_.end(), [](const auto& s) { return s->parameters_sharded(); });
  if (sharded) {
    for (const auto& s : sharded_) s->gather_parameters();
  }
  f();
  if (sharded) {
    for (const auto& s : sharded_) s->shard_parameters();
  }
}

bool Trainer::Impl::optimizer_in_shards() const {
  return ddp_ && options_.sharding() != Sharding::kNone && options_.save_format() == SaveFormat::kSharded;
}

// Every rank writes its shards of each optimizer's parameters and state (a chunk's tensors
// "chunks/<k>/weights" and "chunks/<k>/<state>") to `path`.rank<R>-of-<N>, and all wait for all: the
// index, written after, names only whole sets.
nlohmann::json Trainer::Impl::write_optimizer_shard(const std::string& path) {
  std::map<const void*, std::string> names;
  for (const auto& p : state_.model->named_parameters()) names[p.value().unsafeGetTensorImpl()] = p.key();
  const std::string id = ddp_->broadcast(std::to_string(state_.timestamp.batch()) + "-" +
                                         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  nlohmann::json chunks = nlohmann::json::array();
  StateDict mine;
  for (std::size_t o = 0; o < sharded_.size(); ++o) {
    for (auto& chunk : sharded_[o]->shard_state()) {
      nlohmann::json params = nlohmann::json::array(), states = nlohmann::json::array();
      for (const auto& p : chunk.params) params.push_back({names.at(p.unsafeGetTensorImpl()), p.sizes().vec()});
      const std::string key = "chunks/" + std::to_string(chunks.size()) + "/";
      mine.tensors[key + "weights"] = chunk.weights.to(at::kCPU);
      for (auto& [name, tensor] : chunk.state) {
        states.push_back(name);
        mine.tensors[key + name] = tensor.detach().to(at::kCPU);
      }
      chunks.push_back(
          {{"optimizer", o}, {"shard", chunk.shard}, {"params", params}, {"state", states}, {"weights", true}});
    }
  }
  mine.values = {{"id", id}, {"rank", ddp_->rank()}, {"ranks", ddp_->size()}};
  write_checkpoint(detail::optimizer_shard_path(path, ddp_->rank(), ddp_->size()), mine, nlohmann::json::object());
  ddp_->allreduce(std::vector<double>{0.0});  // every rank's file is whole before the index
  return {{"ranks", ddp_->size()}, {"id", id}, {"chunks", chunks}};
}

}  // namespace baton
