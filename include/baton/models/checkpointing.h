// Activation checkpointing: a unit of the model (a transformer block, a residual block) keeps no
// activations for backward; backward computes them again from the unit's input when it reaches the
// unit (Chen et al. 2016, "Training deep nets with sublinear memory cost"; PyTorch's
// torch.utils.checkpoint). Memory for a few more flops: what a step holds shrinks to the units'
// inputs and one unit's activations.
//
//   baton::checkpoint_activations(*model, {"auto"});   // the model's repeated blocks
//   baton::checkpoint_activations(*model, {"Block"});  // by kind
//
// The recomputation sees what the forward saw: the random generator's state (dropout draws the same
// masks) and the buffers (BatchNorm's running statistics move once a step, not twice), so the
// gradients are the ones without it. The model does not change (its modules, their names): the
// slots holding the units are marked (Replaceable::set_recomputed); checkpoints and exports are the
// same files. Recipes: `activation_checkpointing: auto` (docs/distributed.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>

namespace baton {

class Replaceable;

// A module's kind as activation_checkpointing names it: its class without namespaces and without
// "Impl" ("Block", "BasicBlock", "Linear").
std::string module_kind(const torch::nn::Module& module);

// The kinds `auto` takes: modules with children of their own that fill two or more slots of the
// model's Replaceable modules (baton/models/surgery.h): gpt's blocks, a ResNet's residual blocks.
std::vector<std::string> repeated_unit_kinds(torch::nn::Module& model);

// Every slot module of `model` whose kind is one of `kinds` ({"auto"}: repeated_unit_kinds()) has
// its activations recomputed in backward from now on; returns how many units. Throws
// std::invalid_argument naming a kind no slot of the model has (and the kinds it has), or `auto`
// on a model without repeated blocks.
int checkpoint_activations(torch::nn::Module& model, const std::vector<std::string>& kinds);

// What runs around a unit's forward and backward while it trains: fully sharded training
// (TrainerOptions::sharding kFull) gathers the unit's parameters before each, frees them after its
// forward, and after its backward reduces their gradients to their shards and frees them.
class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  virtual void before_forward() = 0;
  virtual void after_forward() = 0;
  virtual void before_backward() = 0;
  virtual void after_backward() = 0;
};

// `unit`'s forward of `input` as a node of its own in the backward graph: `recompute` keeps no
// activations (backward computes them again); `hooks` (may be nullptr) run around both passes. What
// a Replaceable calls for a slot set so while it trains.
at::Tensor unit_forward(const torch::nn::AnyModule& unit, const at::Tensor& input, bool recompute,
                        const std::shared_ptr<UnitHooks>& hooks);

// The slot modules of `model` whose kind is one of `kinds` ({"auto"}: repeated_unit_kinds()),
// outermost only (a unit inside another is part of it), in the order the slots were added; each
// with `f(owner, slot name)` called. Throws std::invalid_argument, its message starting with `key`
// ("shard_unit: the model has no Bottleneck block (its blocks: Block)"), for a kind no slot has,
// or `auto` on a model without repeated blocks.
int for_each_unit(torch::nn::Module& model, const std::vector<std::string>& kinds, const std::string& key,
                  const std::function<void(Replaceable& owner, const std::string& slot)>& f);

}  // namespace baton
