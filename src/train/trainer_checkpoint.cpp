// The Trainer's checkpoint I/O: snapshot() and save_checkpoint() write the run's state,
// load_checkpoint() reads it back (the weights, then optimizers, random generators, metrics and
// the time); the file format is src/train/checkpoint.cpp's.
#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "baton/algorithms/registry.h"
#include "baton/core/grad_scaler.h"
#include "baton/models/hf.h"
#include "baton/optim/optimizers.h"
#include "baton/train/checkpoint.h"
#include "baton/train/trainer.h"
#include "train/sharded_checkpoint.h"
#include "train/sharded_optimizer.h"
#include "train/trainer_impl.h"
#include "train/trainer_internal.h"

namespace baton {
namespace {

// Glob match with * as the only wildcard: "model/module.f2.*" matches "model/module.f2.weight".
bool glob_match(std::string_view pattern, std::string_view name) {
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++, mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p, ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1, n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return glob_match(p, name); });
}

std::string bytes_of(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

// The random generator of a CUDA device (its state goes into checkpoints beside the CPU's).
at::Generator cuda_generator(c10::Device device) { return at::globalContext().defaultGenerator(device); }

// load_strict: false loaded only some of the model's tensors: say so, and refuse a load of none
// (names of another model: training would start from scratch believing it fine-tunes).
void report_partial_load(const std::string& path, std::size_t loaded, const std::vector<std::string>& kept) {
  std::string examples;
  for (std::size_t i = 0; i < kept.size() && i < 3; ++i) examples += (i ? ", " : "") + kept[i];
  if (kept.size() > 3) examples += ", …";
  const std::string counts =
      std::to_string(loaded) + " of the model's " + std::to_string(loaded + kept.size()) + " tensors";
  if (loaded == 0) {
    throw std::invalid_argument(path + ": none of its tensors has the name of one of this model's (" + counts +
                                " loaded; the model's are " + examples + "); is it another model's checkpoint?");
  }
  spdlog::warn("{}: loaded {}; {} kept as they were ({}) (load_strict: false)", path, counts, kept.size(), examples);
}

// The model's parameters and buffers from the checkpoint's "model/" tensors: by name, shapes
// checked; load_strict: every one on both sides; ignore_keys: patterns of names left as they are.
void load_model_tensors(const std::string& path, const StateDict& sd, Model& model, bool strict,
                        const std::vector<std::string>& ignore_keys, const std::set<std::string>& unsaved) {
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  std::vector<std::string> kept;  // the model's tensors the checkpoint has nothing for
  auto restore = [&](const std::string& name, at::Tensor target) {
    const std::string key = "model/" + name;
    if (matches_any(key, ignore_keys)) return;
    auto it = sd.tensors.find(key);
    if (it == sd.tensors.end() && unsaved.count(name)) return;  // a LoRA run's base: the model's own
    if (it == sd.tensors.end()) {
      if (strict) throw std::invalid_argument(path + ": has no tensor '" + key + "' for this model (load_strict)");
      kept.push_back(key);
      return;
    }
    if (it->second.sizes() != target.sizes()) {
      throw std::invalid_argument(path + ": tensor '" + key + "' has shape " + c10::str(it->second.sizes()) +
                                  " but the model's is " + c10::str(target.sizes()) +
                                  "; is it another model? (load_ignore_keys skips tensors)");
    }
    target.copy_(it->second);
    used.insert(key);
  };
  for (auto& item : model.named_parameters()) restore(item.key(), item.value());
  for (auto& item : model.named_buffers()) restore(item.key(), item.value());
  if (!kept.empty()) report_partial_load(path, used.size(), kept);
  if (strict) {
    for (const auto& [name, tensor] : sd.tensors) {
      if (name.rfind("model/", 0) == 0 && !used.count(name) && !matches_any(name, ignore_keys)) {
        throw std::invalid_argument(
            std::string(path).append(": tensor '").append(name).append("' is not in this model (load_strict)"));
      }
    }
  }
}

// Each optimizer's state (momentum and the like), onto the run's device, where its parameters are.
// The state of another kind of optimizer is refused before LibTorch reads it (it would assert).
void load_optimizers(const std::string& path, const StateDict& sd, State& state) {
  const nlohmann::json kinds = sd.values.value("optimizer_kinds", nlohmann::json::array());
  for (std::size_t i = 0; i < state.optimizers.size(); ++i) {
    const std::string kind = optimizer_kind(*state.optimizers[i]);
    if (i < kinds.size() && kinds[i].is_string() && kinds[i] != kind) {
      throw CheckpointError(std::string(path)
                                .append(": holds the state of optimizer ")
                                .append(kinds[i].get<std::string>())
                                .append(", but this run's optimizer is ")
                                .append(kind)
                                .append("; resume with the same optimizer, or start from its weights "
                                        "(load_weights_only: true)"));
    }
    auto it = sd.tensors.find("optimizers/" + std::to_string(i));
    if (it == sd.tensors.end()) throw CheckpointError(path + ": has no state for optimizer " + std::to_string(i));
    const at::Tensor bytes = it->second.contiguous();
    std::istringstream in(
        std::string(static_cast<const char*>(bytes.data_ptr()), static_cast<std::size_t>(bytes.numel())));
    torch::serialize::InputArchive archive;
    try {
      archive.load_from(in, state.device);  // momentum and the like, where this run's parameters are
      state.optimizers[i]->load(archive);
    } catch (const c10::Error&) {  // LibTorch's own words here are an assertion's: not a user's message
      throw CheckpointError(std::string(path)
                                .append(": optimizer ")
                                .append(std::to_string(i))
                                .append("'s state does not fit this run's ")
                                .append(kind)
                                .append(" optimizer (saved with another optimizer or other parameters?); start from "
                                        "its weights (load_weights_only: true)"));
    }
  }
}

// A checkpoint with its optimizer state as named tensors (save_format: sharded, joined when read):
// "optimizer_state/<optimizer>/<parameter>/<state>" onto each parameter, where it is.
void load_named_optimizer_state(const std::string& path, const StateDict& sd, State& state) {
  std::map<std::string, at::Tensor> params;
  for (const auto& p : state.model->named_parameters()) params[p.key()] = p.value();
  std::map<std::pair<std::size_t, std::string>, std::map<std::string, at::Tensor>> found;
  const std::string prefix = detail::kOptimizerStatePrefix;
  for (const auto& [name, tensor] : sd.tensors) {
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const auto slash = rest.find('/'), last = rest.rfind('/');
    if (slash == std::string::npos || last == slash) {
      throw CheckpointError(std::string(path).append(": a tensor named ").append(name).append(" (not baton's)"));
    }
    const std::string index = rest.substr(0, slash);
    if (index.empty() || index.size() > 6 || index.find_first_not_of("0123456789") != std::string::npos) {
      throw CheckpointError(std::string(path).append(": a tensor named ").append(name).append(" (not baton's)"));
    }
    const std::size_t optimizer = std::stoul(index);
    const std::string param = rest.substr(slash + 1, last - slash - 1);
    if (optimizer >= state.optimizers.size() || !params.count(param)) {
      throw CheckpointError(std::string(path)
                                .append(": holds optimizer state for '")
                                .append(param)
                                .append("', which this run's optimizer ")
                                .append(std::to_string(optimizer))
                                .append(" does not have; is it another model?"));
    }
    found[{optimizer, param}][rest.substr(last + 1)] = tensor.to(params.at(param).device());
  }
  for (const auto& [key, tensors] : found) {
    set_optimizer_param_state(*state.optimizers[key.first], params.at(key.second), tensors);
  }
}

// A sharded checkpoint's parameters are this run's (the same optimizer, the same shape).
void check_shard_params(const std::string& path, const detail::ShardedCheckpoint& shards, const State& state) {
  std::map<std::string, at::Tensor> params;
  for (const auto& p : state.model->named_parameters()) params[p.key()] = p.value();
  for (const auto& [key, p] : shards.params()) {
    const auto it = params.find(key.second);
    if (key.first < 0 || static_cast<std::size_t>(key.first) >= state.optimizers.size() || it == params.end() ||
        it->second.sizes().vec() != p.shape) {
      throw CheckpointError(std::string(path)
                                .append(": holds optimizer state for '")
                                .append(key.second)
                                .append("', which this run's optimizer ")
                                .append(std::to_string(key.first))
                                .append(" does not have in that shape; is it another model?"));
    }
  }
}

// The random generators' states: the CPU's, and the GPU's when the run is on one.
void load_generators(const StateDict& sd, c10::Device device) {
  if (auto it = sd.tensors.find("rng/torch"); it != sd.tensors.end()) {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(it->second);
  }
  if (auto it = sd.tensors.find("rng/cuda"); it != sd.tensors.end() && device.is_cuda()) {
    auto generator = cuda_generator(device);
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(it->second);
  }
}

}  // namespace

// Algorithms that changed the model's structure (required_on_load) and that this run lacks are
// built from the checkpoint's record and applied before the weights load, so the weights fit.
void Trainer::Impl::reapply_surgery(const std::string& path, const StateDict& sd) {
  const auto it = sd.values.find("required_on_load");
  if (it == sd.values.end() || !it->is_array()) return;
  for (const auto& spec : *it) {
    const std::string name = spec.value("name", "");
    const bool present = std::any_of(state_.algorithms.begin(), state_.algorithms.end(), [&](const auto& a) {
      return a->recipe_spec().is_object() && a->recipe_spec().value("name", "") == name;
    });
    if (present || name.empty()) continue;
    std::shared_ptr<Algorithm> algorithm;
    try {
      algorithm = make_algorithm(name, spec.value("options", nlohmann::json::object()));
    } catch (const std::invalid_argument& e) {
      throw CheckpointError(path + ": cannot rebuild the model surgery it was saved with (" + e.what() + ")");
    }
    spdlog::info("{}: applying {} to the model, as the run that saved it did", path, name);
    algorithm->apply(Event::kInit, state_, *logger_);
    state_.algorithms.push_back(algorithm);
  }
}

const std::string& Trainer::Impl::frozen_base_identity() const {
  if (!frozen_base_.empty() || state_.unsaved_model_tensors.empty() || !state_.model) return frozen_base_;
  StateDict base;
  for (const auto& item : state_.model->named_parameters()) {
    if (state_.unsaved_model_tensors.count(item.key())) base.tensors["model/" + item.key()] = item.value();
  }
  for (const auto& item : state_.model->named_buffers()) {
    if (state_.unsaved_model_tensors.count(item.key())) base.tensors["model/" + item.key()] = item.value();
  }
  nlohmann::json id = {{"tensors", base.tensors.size()}, {"weights_sha256", weights_sha256(base)}};
  const auto* model = dynamic_cast<const Model*>(state_.model.get());
  if (const HfConfig* config = model == nullptr ? nullptr : hf_config_of(*model)) {
    id["config_sha256"] = sha256_hex(config->json);
  }
  frozen_base_ = id.dump();
  return frozen_base_;
}

// Adapters trained on one base and loaded onto another would run, and mean nothing: a checkpoint
// that names its frozen base (frozen_base) loads only onto a model whose base is that one.
void Trainer::Impl::check_frozen_base(const std::string& path, const StateDict& sd) const {
  const auto saved = sd.values.find("frozen_base");
  if (saved == sd.values.end() || !saved->is_object() || frozen_base_identity().empty()) return;
  const nlohmann::json now = nlohmann::json::parse(frozen_base_identity());
  for (const auto& [key, what] :
       {std::pair{"config_sha256", "config.json has"}, std::pair{"weights_sha256", "weights have"}}) {
    const std::string was = saved->value(key, ""), is = now.value(key, "");
    if (was.empty() || is.empty() || was == is) continue;
    throw CheckpointError(path + ": its LoRA adapters were trained on another base: the frozen model's " + what +
                          " changed since (SHA-256 " + was.substr(0, 12) + "..., now " + is.substr(0, 12) +
                          "...); load it onto the Hugging Face folder it was trained from (its model.path)");
  }
}

// The run's state for a checkpoint. `in_shards` (save_format: sharded): without the parameters the
// shards hold, which each rank writes with its shards of the optimizer's state (nothing gathered).
// Under sharding every rank calls it (the gathers are collective).
StateDict Trainer::Impl::snapshot(bool weights_only, bool in_shards) const {
  std::set<const void*> sharded;
  if (in_shards) {
    for (const auto& s : sharded_) {
      for (const auto& p : s->parameters()) sharded.insert(p.unsafeGetTensorImpl());
    }
  }
  StateDict out;
  nlohmann::json values;
  const auto take = [&] {  // full sharding: the units gathered, and copied before they are freed again
    const StateDict full = state_.state_dict();
    values = full.values;
    for (const auto& [name, tensor] : full.tensors) {
      if (weights_only && name.rfind("model/", 0) != 0) continue;
      if (sharded.count(tensor.unsafeGetTensorImpl()) == 0) out.tensors[name] = tensor.detach().clone();
    }
  };
  if (in_shards) {
    take();
  } else {
    with_whole_parameters(take);
  }
  nlohmann::json surgery = nlohmann::json::array();
  for (const auto& a : state_.algorithms) {
    if (a->required_on_load() && a->recipe_spec().is_object()) surgery.push_back(a->recipe_spec());
  }
  if (!surgery.empty()) out.values["required_on_load"] = surgery;
  if (!frozen_base_identity().empty()) out.values["frozen_base"] = nlohmann::json::parse(frozen_base_identity());
  if (weights_only) return out;
  for (const auto& [key, value] : values.items()) out.values[key] = value;
  nlohmann::json kinds = nlohmann::json::array();
  for (const auto& optimizer : state_.optimizers) kinds.push_back(optimizer_kind(*optimizer));
  out.values["optimizer_kinds"] = kinds;
  if (!in_shards) {
    for (const auto& s : sharded_) s->gather_state();  // every rank's shards, whole on rank 0 (collective)
  }
  for (std::size_t i = 0; i < state_.optimizers.size(); ++i) {
    const std::string bytes = bytes_of(*state_.optimizers[i]);
    out.tensors["optimizers/" + std::to_string(i)] =
        torch::from_blob(const_cast<char*>(bytes.data()), {static_cast<int64_t>(bytes.size())}, torch::kByte).clone();
  }
  for (const auto& s : sharded_) s->release_gathered();
  {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    out.tensors["rng/torch"] = generator.get_state();
  }
  if (state_.device.is_cuda()) {
    auto generator = cuda_generator(state_.device);
    std::lock_guard<std::mutex> lock(generator.mutex());
    out.tensors["rng/cuda"] = generator.get_state();
  }
  if (state_.grad_scaler) out.values["grad_scaler"] = state_.grad_scaler->state_dict();
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [label, values] : state_.eval_metrics) metrics[label] = values;
  out.values["eval_metrics"] = metrics;
  // Inside fit(), the time of this fit so far counts too.
  const double train_s = trained_seconds();
  out.values["summary"] = {{"train_s", train_s}, {"eval_s", summary_.eval_s}, {"train_loss", summary_.train_loss}};
  out.values["last_eval_batches"] = last_eval_batches_;
  return out;
}

void Trainer::Impl::save_checkpoint(const std::string& path, bool weights_only) {
  flush_losses();
  const StateDict state = snapshot(weights_only);  // under sharding, every rank gathers
  if (sharded_.empty() || rank() == 0) write_checkpoint(path, state, options_.checkpoint_meta());
}

void Trainer::Impl::load_checkpoint(const std::string& path, bool weights_only, bool strict,
                                    const std::vector<std::string>& ignore_keys) {
  try {
    load_checkpoint_file(path, weights_only, strict, ignore_keys);
  } catch (const nlohmann::json::exception&) {  // a well-formed file whose values have other types
    throw CheckpointError(path +
                          ": a value in its metadata is not of the type baton writes (written by something else, "
                          "or edited?); it cannot be resumed from");
  }
}

void Trainer::Impl::load_checkpoint_file(const std::string& path, bool weights_only, bool strict,
                                         const std::vector<std::string>& ignore_keys) {
  // A sharded run reads each rank's block of a sharded checkpoint's optimizer state, not the whole.
  const bool in_shards = ddp_ && options_.sharding() != Sharding::kNone && !weights_only;
  std::shared_ptr<detail::ShardedCheckpoint> shards;
  const CheckpointFile ckpt = detail::read_checkpoint(path, !in_shards, &shards);
  const StateDict& sd = ckpt.state;
  reapply_surgery(path, sd);
  check_frozen_base(path, sd);
  state_.model->to(state_.device);
  Model& model = current_model();
  load_model_tensors(path, sd, model, strict, ignore_keys, state_.unsaved_model_tensors);
  loaded_from_ = path;
  if (weights_only) return;

  if (!sd.values.contains("timestamp"))
    throw CheckpointError(path + ": holds only weights; load it with load_weights_only");
  // Everything but the model (done above) and what this run's options decide; the algorithms' and
  // callbacks' tensors (EMA's average, …) live on the run's device, whichever one wrote them.
  StateDict rest = sd;
  for (auto& [name, tensor] : rest.tensors) {
    if (name.rfind("algorithms/", 0) == 0 || name.rfind("callbacks/", 0) == 0) tensor = tensor.to(state_.device);
  }
  for (auto& item : model.named_parameters()) rest.tensors["model/" + item.key()] = item.value();
  for (auto& item : model.named_buffers()) rest.tensors["model/" + item.key()] = item.value();
  const std::string run_name = state_.run_name;
  try {
    state_.load_state_dict(rest);
  } catch (const std::invalid_argument& e) {  // the state's values are not what baton wrote
    throw CheckpointError(path + ": " + e.what());
  }
  state_.run_name = run_name;
  state_.max_duration = options_.max_duration();
  state_.precision = options_.precision();
  load_optimizers(path, sd, state_);
  load_named_optimizer_state(path, sd, state_);
  for (const auto& s : sharded_) s->reshard();  // each rank's shards of what loaded
  if (shards) check_shard_params(path, *shards, state_);
  pending_shards_ = in_shards ? shards : nullptr;  // its files stay open only until the shards read them
  load_shard_states();                             // now, or when the shards are made
  load_generators(sd, state_.device);
  if (auto it = sd.values.find("grad_scaler"); it != sd.values.end() && state_.grad_scaler) {
    try {
      state_.grad_scaler->load_state_dict(*it);
    } catch (const std::invalid_argument& e) {
      throw CheckpointError(path + ": " + e.what());
    }
  }
  if (auto it = sd.values.find("eval_metrics"); it != sd.values.end() && it->is_object()) {
    for (const auto& [label, values] : it->items()) {
      for (const auto& [name, value] : values.items()) state_.eval_metrics[label][name] = value.get<double>();
    }
  }
  if (auto it = sd.values.find("summary"); it != sd.values.end() && it->is_object()) {
    summary_.train_s = it->value("train_s", 0.0);
    summary_.eval_s = it->value("eval_s", 0.0);
    summary_.train_loss = it->value("train_loss", 0.0);
  }
  last_eval_batches_.clear();
  if (auto it = sd.values.find("last_eval_batches"); it != sd.values.end() && it->is_object()) {
    for (const auto& [label, batch] : it->items()) {
      if (batch.is_number_integer()) last_eval_batches_[label] = batch.get<int64_t>();
    }
  } else if (auto old = sd.values.find("last_eval_batch"); old != sd.values.end() && old->is_number_integer()) {
    // A checkpoint written before evaluators had intervals of their own: one batch for all.
    for (const Evaluator& e : options_.eval_dataloaders()) last_eval_batches_[e.label] = old->get<int64_t>();
  }
  summary_.steps = state_.timestamp.batch();
  summary_.samples = state_.timestamp.sample();
}

}  // namespace baton
