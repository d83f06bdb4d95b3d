#include "baton/nas/space.h"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <set>

#include <torch/torch.h>

namespace baton::nas {

// The state of one level of choices: the top, or inside a LayerChoice's candidate.
class Scope {
 public:
  std::string where;                           // "" at the top, else "label=candidate" (nested: a/b=c)
  const nlohmann::json* parameters = nullptr;  // freeze(): the values at this level
  nlohmann::json dims = nlohmann::json::object();
};

namespace {

// The supernet is checked by one forward of zeros; while it runs, every choice module runs all its
// candidates and compares their output shapes.
thread_local bool checking = false;

std::string shape(const at::Tensor& t) { return c10::str(t.sizes()); }

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string candidates_text(const nlohmann::json& candidates) {
  std::vector<std::string> names;
  for (const auto& c : candidates) {
    if (c.is_object())
      names.push_back(c.value("_name", std::string()));
    else
      names.push_back(c.is_string() ? c.get<std::string>() : c.dump());
  }
  return join(names);
}

// "KIND 'label'WHERE: value is not one of WHOSE candidates (...)".
[[noreturn]] void not_a_candidate(const std::string& kind, const std::string& label, const std::string& where,
                                  const nlohmann::json& value, const nlohmann::json& candidates,
                                  const std::string& whose) {
  throw SpaceError((kind.empty() ? "" : kind + " ") + "'" + label + "'" + where + ": " + value.dump() +
                   " is not one of " + whose + " candidates (" + candidates_text(candidates) + ")");
}

[[noreturn]] void no_value(const std::string& label, const std::string& where, const nlohmann::json& candidates) {
  throw SpaceError("the path has no value for '" + label + "'" + where + " (one of " + candidates_text(candidates) +
                   ")");
}

void require_label(const std::string& kind, const std::string& label) {
  if (label.empty()) throw SpaceError(kind + ": the label is empty (every choice needs one)");
  if (label.find_first_of(" .=\t\n") != std::string::npos || label == "_name" || label == "name")
    throw SpaceError(kind + " '" + label + "': a label has no spaces, dots or '=', and is not _name or name");
}

// `value` as one of `candidates` (a number matches a number of the same value): that candidate.
std::optional<nlohmann::json> match(const nlohmann::json& candidates, const nlohmann::json& value) {
  for (const auto& c : candidates) {
    if (c == value) return c;
    if (c.is_number() && value.is_number() && c.get<double>() == value.get<double>()) return c;
  }
  return std::nullopt;
}

// A LayerChoice's candidates run one after another in a supernet; the active one's output is its own.
class LayerChoiceModuleImpl : public torch::nn::Module {
 public:
  LayerChoiceModuleImpl(std::string label, const std::vector<Candidate>& candidates,
                        std::vector<torch::nn::AnyModule> made)
      : torch::nn::Module("LayerChoice"), label_(std::move(label)), made_(std::move(made)) {
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      names_.push_back(candidates[i].name);
      register_module(candidates[i].name, made_[i].ptr());
    }
  }
  at::Tensor forward(const at::Tensor& x) {
    if (!checking) return made_[active_].forward<at::Tensor>(x);
    at::Tensor first;
    for (std::size_t i = 0; i < made_.size(); ++i) {
      at::Tensor out = made_[i].forward<at::Tensor>(x);
      if (i == 0)
        first = out;
      else if (out.sizes() != first.sizes()) {
        throw SpaceError("LayerChoice '" + label_ + "': its candidates disagree on the output shape for an input of " +
                         shape(x) + ": " + names_[0] + " gives " + shape(first) + ", " + names_[i] + " gives " +
                         shape(out));
      }
    }
    return first;
  }
  void select(const std::string& name) {
    active_ = static_cast<std::size_t>(std::find(names_.begin(), names_.end(), name) - names_.begin());
  }

 private:
  std::string label_;
  std::vector<std::string> names_;
  std::vector<torch::nn::AnyModule> made_;
  std::size_t active_ = 0;
};
TORCH_MODULE(LayerChoiceModule);

// A Repeat in a supernet: the deepest depth's blocks, the active depth's run.
class RepeatModuleImpl : public torch::nn::Module {
 public:
  RepeatModuleImpl(std::string label, std::vector<int64_t> depths, std::vector<torch::nn::AnyModule> blocks)
      : torch::nn::Module("Repeat"), label_(std::move(label)), depths_(std::move(depths)), blocks_(std::move(blocks)) {
    for (std::size_t i = 0; i < blocks_.size(); ++i) register_module(std::to_string(i), blocks_[i].ptr());
    active_ = depths_.front();
  }
  at::Tensor forward(at::Tensor x) {
    const std::string input = shape(x);
    std::string first;
    for (int64_t i = 0; i < (checking ? depths_.back() : active_); ++i) {
      x = blocks_[static_cast<std::size_t>(i)].forward<at::Tensor>(x);
      if (!checking || std::find(depths_.begin(), depths_.end(), i + 1) == depths_.end()) continue;
      if (first.empty())
        first = shape(x);
      else if (shape(x) != first) {
        disagree(input, first, i + 1, shape(x));
      }
    }
    return x;
  }
  void select(int64_t depth) { active_ = depth; }

 private:
  [[noreturn]] void disagree(const std::string& input, const std::string& first, int64_t depth,
                             const std::string& got) const {
    throw SpaceError("Repeat '" + label_ + "': its depths disagree on the output shape for an input of " + input +
                     ": " + std::to_string(depths_.front()) + " blocks give " + first + ", " + std::to_string(depth) +
                     " give " + got);
  }

  std::string label_;
  std::vector<int64_t> depths_;
  std::vector<torch::nn::AnyModule> blocks_;
  int64_t active_ = 1;
};
TORCH_MODULE(RepeatModule);

// A frozen Repeat: its blocks one after another.
class ChainImpl : public torch::nn::Module {
 public:
  explicit ChainImpl(std::vector<torch::nn::AnyModule> blocks)
      : torch::nn::Module("Chain"), blocks_(std::move(blocks)) {
    for (std::size_t i = 0; i < blocks_.size(); ++i) register_module(std::to_string(i), blocks_[i].ptr());
  }
  at::Tensor forward(at::Tensor x) {
    for (auto& b : blocks_) x = b.forward<at::Tensor>(x);
    return x;
  }

 private:
  std::vector<torch::nn::AnyModule> blocks_;
};
TORCH_MODULE(Chain);

}  // namespace

ValueChoice::ValueChoice(std::string label_, nlohmann::json candidates_)
    : label(std::move(label_)), candidates(std::move(candidates_)) {
  require_label("ValueChoice", label);
  if (!candidates.is_array() || candidates.empty())
    throw SpaceError("ValueChoice '" + label + "': no candidates (give a list of numbers or strings)");
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& c = candidates[i];
    if (!c.is_number() && !c.is_string())
      throw SpaceError("ValueChoice '" + label + "': candidate " + c.dump() + " is not a number or a string");
    for (std::size_t j = 0; j < i; ++j) {
      if (match(nlohmann::json::array({candidates[j]}), c))
        throw SpaceError("ValueChoice '" + label + "': candidate " + c.dump() + " is given twice");
    }
  }
}

LayerChoice::LayerChoice(std::string label_, std::vector<Candidate> candidates_)
    : label(std::move(label_)), candidates(std::move(candidates_)) {
  require_label("LayerChoice", label);
  if (candidates.empty()) throw SpaceError("LayerChoice '" + label + "': no candidates");
  std::set<std::string> names;
  for (const auto& c : candidates) {
    require_label("LayerChoice '" + label + "': candidate", c.name);
    if (!c.make) throw SpaceError("LayerChoice '" + label + "': candidate '" + c.name + "' has no builder");
    if (!names.insert(c.name).second)
      throw SpaceError("LayerChoice '" + label + "': candidate '" + c.name + "' is given twice");
  }
}

Repeat::Repeat(std::string label_, std::vector<int64_t> depths_, std::function<torch::nn::AnyModule(int64_t)> block_)
    : label(std::move(label_)), depths(std::move(depths_)), block(std::move(block_)) {
  require_label("Repeat", label);
  if (depths.empty()) throw SpaceError("Repeat '" + label + "': no depths");
  if (!block) throw SpaceError("Repeat '" + label + "': no block builder");
  for (std::size_t i = 0; i < depths.size(); ++i) {
    if (depths[i] < 1 || depths[i] > 1000 || (i > 0 && depths[i] <= depths[i - 1]))
      throw SpaceError("Repeat '" + label + "': depths must increase, each from 1 to 1000");
  }
}

InputChoice::InputChoice(std::string label_, int64_t inputs_, int64_t chosen_, Reduction reduction_)
    : label(std::move(label_)), inputs(inputs_), chosen(chosen_), reduction(reduction_) {
  require_label("InputChoice", label);
  if (inputs < 1 || inputs > 64 || chosen < 1 || chosen > inputs)
    throw SpaceError("InputChoice '" + label + "': chooses " + std::to_string(chosen) + " of " +
                     std::to_string(inputs) + " inputs (1 <= chosen <= inputs <= 64)");
}

InputSelectImpl::InputSelectImpl(InputChoice choice, std::vector<int64_t> selected)
    : torch::nn::Module("InputSelect"), choice_(std::move(choice)), selected_(std::move(selected)) {}

at::Tensor InputSelectImpl::forward(const std::vector<at::Tensor>& inputs) {
  if (static_cast<int64_t>(inputs.size()) != choice_.inputs) {
    throw SpaceError("InputChoice '" + choice_.label + "': given " + std::to_string(inputs.size()) +
                     " inputs, it chooses among " + std::to_string(choice_.inputs));
  }
  std::vector<at::Tensor> picked;
  if (checking) {
    picked = inputs;
  } else {
    for (int64_t i : selected_) picked.push_back(inputs[static_cast<std::size_t>(i)]);
  }
  for (std::size_t i = 1; i < picked.size(); ++i) {
    const bool concat = choice_.reduction == InputChoice::Reduction::kConcat;
    auto a = picked[0].sizes().vec(), b = picked[i].sizes().vec();
    if (concat && a.size() > 1 && b.size() > 1) a[1] = b[1] = 0;  // channels may differ
    if (a != b) {
      throw SpaceError("InputChoice '" + choice_.label + "': its inputs disagree on the shape: " + shape(picked[0]) +
                       " and " + shape(picked[i]));
    }
  }
  if (checking) picked.resize(static_cast<std::size_t>(choice_.chosen));  // the supernet's output shape
  switch (choice_.reduction) {
    case InputChoice::Reduction::kConcat: return torch::cat(picked, 1);
    case InputChoice::Reduction::kMean: return torch::stack(picked).mean(0);
    case InputChoice::Reduction::kSum: break;
  }
  return torch::stack(picked).sum(0);
}

namespace {

// An InputChoice's candidate "0+2" as the indices {0, 2}.
std::vector<int64_t> selection(const std::string& name) {
  std::vector<int64_t> selected;
  for (std::size_t at = 0; at <= name.size();) {
    const auto plus = std::min(name.find('+', at), name.size());
    selected.push_back(std::stoll(name.substr(at, plus - at)));
    at = plus + 1;
  }
  return selected;
}

// The scope of a LayerChoice's candidate inside `outer`.
std::shared_ptr<Scope> inner_scope(const Scope& outer, const std::string& label, const std::string& candidate) {
  auto inner = std::make_shared<Scope>();
  inner->where = (outer.where.empty() ? "" : outer.where + "/") + label + "=" + candidate;
  return inner;
}

}  // namespace

struct Space::Impl {
  const nlohmann::json* parameters_;         // nullptr: the supernet
  const nlohmann::json* allowed_ = nullptr;  // a one-shot supernet: {label: the values it may take}
  std::vector<std::shared_ptr<Scope>> scopes_;
  std::vector<std::pair<std::string, Switch>> switches_;  // a one-shot supernet's: what a path sets
};

Space::~Space() = default;

bool Space::supernet() const { return impl_->parameters_ == nullptr; }

Space::Space(const nlohmann::json* parameters) : impl_(std::make_unique<Impl>()) {
  impl_->parameters_ = parameters;
  auto top = std::make_shared<Scope>();
  top->parameters = parameters;
  impl_->scopes_.push_back(top);
}

namespace {

[[noreturn]] void label_taken(const std::string& kind, const std::string& label, const std::string& at,
                              const std::string& other) {
  throw SpaceError(kind + " '" + label + "'" + at + ": the label names another choice already" +
                   (other.empty() ? "" : " (inside " + other + ")") + "; give each choice a label of its own");
}

}  // namespace

nlohmann::json Space::record(const std::string& label, const std::string& kind, nlohmann::json candidates) {
  Scope& scope = *impl_->scopes_.back();
  const std::string at = scope.where.empty() ? "" : " (inside " + scope.where + ")";
  if (!supernet()) {
    const auto& params = *scope.parameters;
    if (!params.is_object() || !params.contains(label)) {
      throw SpaceError("the parameters have no value for " + kind + " '" + label + "'" + at + " (one of " +
                       candidates_text(candidates) + ")");
    }
    nlohmann::json value = params[label];
    if (value.is_object()) value = value.value("_name", value.value("name", nlohmann::json()));
    nlohmann::json plain = nlohmann::json::array();
    for (const auto& c : candidates) plain.push_back(c.is_object() ? c["_name"] : c);
    if (auto found = match(plain, value)) return *found;
    throw SpaceError(kind + " '" + label + "'" + at + ": " + value.dump() + " is not one of its candidates (" +
                     candidates_text(candidates) + ")");
  }
  for (const auto& s : impl_->scopes_) {  // a label met again is the same decision, at the same level
    if (!s->dims.contains(label)) continue;
    if (s.get() != &scope || s->dims[label]["_value"] != candidates) label_taken(kind, label, at, s->where);
    return candidates[0];
  }
  scope.dims[label] = {{"_type", "choice"}, {"_value", candidates}};
  return candidates[0];
}

// A one-shot supernet's candidates of a choice: those `allowed_` names for its label (a value or a
// list; a LayerChoice's candidates by name), else all of them.
nlohmann::json Space::allowed(const std::string& label, const std::string& kind,
                              const nlohmann::json& candidates) const {
  if (impl_->allowed_ == nullptr || !impl_->allowed_->contains(label)) return candidates;
  nlohmann::json wanted = (*impl_->allowed_)[label];
  if (!wanted.is_array()) wanted = nlohmann::json::array({wanted});
  nlohmann::json out = nlohmann::json::array();
  for (auto w : wanted) {
    if (w.is_object()) w = w.value("_name", w.value("name", nlohmann::json()));
    const auto found = match(candidates, w);
    if (!found) not_a_candidate(kind, label, "", w, candidates, "its");
    if (!match(out, *found)) out.push_back(*found);
  }
  if (out.empty()) throw SpaceError(kind + " '" + label + "': no candidate is allowed (an empty list)");
  return out;
}

nlohmann::json Space::resolve(const ValueChoice& choice) {
  const nlohmann::json candidates = allowed(choice.label, "ValueChoice", choice.candidates);
  if (impl_->allowed_ != nullptr && candidates.size() > 1) {
    throw SpaceError("ValueChoice '" + choice.label + "' has " + std::to_string(candidates.size()) + " candidates (" +
                     candidates_text(candidates) +
                     "): a one-shot supernet shares the weights of layer choices, repeats and input choices, not of "
                     "widths; fix it to one value (a search space's model.arch." +
                     choice.label + ": {_type: choice, _value: [V]}) or search it with a multi-trial strategy");
  }
  return record(choice.label, "ValueChoice", candidates);
}

torch::nn::AnyModule Space::layer(const LayerChoice& choice) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& c : choice.candidates) names.push_back(c.name);
  if (!supernet()) {
    const std::string name = record(choice.label, "LayerChoice", names).get<std::string>();
    const auto& c = *std::find_if(choice.candidates.begin(), choice.candidates.end(),
                                  [&](const Candidate& k) { return k.name == name; });
    const nlohmann::json& value = (*impl_->scopes_.back()->parameters)[choice.label];
    auto inner = inner_scope(*impl_->scopes_.back(), choice.label, name);
    static const nlohmann::json kNone = nlohmann::json::object();
    inner->parameters = value.is_object() ? &value : &kNone;
    impl_->scopes_.push_back(inner);
    auto made = c.make();
    impl_->scopes_.pop_back();
    return made;
  }
  // The supernet: every (allowed) candidate, each in its own scope; choices made inside nest under it.
  const nlohmann::json kept = allowed(choice.label, "LayerChoice", names);
  std::vector<Candidate> candidates;
  for (const auto& c : choice.candidates) {
    if (match(kept, c.name)) candidates.push_back(c);
  }
  std::vector<torch::nn::AnyModule> made;
  nlohmann::json values = nlohmann::json::array();
  for (const auto& c : candidates) {
    auto inner = inner_scope(*impl_->scopes_.back(), choice.label, c.name);
    impl_->scopes_.push_back(inner);
    made.push_back(c.make());
    impl_->scopes_.pop_back();
    if (inner->dims.empty()) {
      values.push_back(c.name);
    } else {
      nlohmann::json v = inner->dims;
      v["_name"] = c.name;
      values.push_back(v);
    }
  }
  record(choice.label, "LayerChoice", values);
  LayerChoiceModule module(choice.label, candidates, std::move(made));
  impl_->switches_.emplace_back(choice.label,
                                [m = module.ptr()](const nlohmann::json& v) { m->select(v.get<std::string>()); });
  return torch::nn::AnyModule(module);
}

torch::nn::AnyModule Space::repeat(const Repeat& choice) {
  const nlohmann::json depths = allowed(choice.label, "Repeat", choice.depths);
  const int64_t depth = record(choice.label, "Repeat", depths).get<int64_t>();
  const auto kept = depths.get<std::vector<int64_t>>();
  const int64_t count = supernet() ? *std::max_element(kept.begin(), kept.end()) : depth;
  std::vector<torch::nn::AnyModule> blocks;
  for (int64_t i = 0; i < count; ++i) blocks.push_back(choice.block(i));
  if (!supernet()) return torch::nn::AnyModule(Chain(std::move(blocks)));
  RepeatModule module(choice.label, kept, std::move(blocks));
  impl_->switches_.emplace_back(choice.label,
                                [m = module.ptr()](const nlohmann::json& v) { m->select(v.get<int64_t>()); });
  return torch::nn::AnyModule(module);
}

InputSelect Space::input(const InputChoice& choice) {
  // The selections of `chosen` of `inputs`, as index lists in increasing order.
  nlohmann::json selections = nlohmann::json::array();
  std::vector<int64_t> pick;
  std::function<void(int64_t)> add = [&](int64_t from) {
    if (static_cast<int64_t>(pick.size()) == choice.chosen) {
      std::string name;
      for (int64_t i : pick) name += (name.empty() ? "" : "+") + std::to_string(i);
      selections.push_back(name);
      return;
    }
    for (int64_t i = from; i < choice.inputs && selections.size() < 10000; ++i) {
      pick.push_back(i);
      add(i + 1);
      pick.pop_back();
    }
  };
  add(0);
  const std::string name =
      record(choice.label, "InputChoice", allowed(choice.label, "InputChoice", selections)).get<std::string>();
  InputSelect module(choice, selection(name));
  if (supernet()) {
    impl_->switches_.emplace_back(
        choice.label, [m = module.ptr()](const nlohmann::json& v) { m->select(selection(v.get<std::string>())); });
  }
  return module;
}

namespace {

// Every label of `dims` (an object of choices), nested ones after their choice's.
void collect_labels(const nlohmann::json& dims, std::vector<std::string>& out) {
  for (const auto& [label, d] : dims.items()) {
    out.push_back(label);
    for (const auto& v : d["_value"]) {
      if (!v.is_object()) continue;
      nlohmann::json inner = v;
      inner.erase("_name");
      collect_labels(inner, out);
    }
  }
}

[[noreturn]] void unknown_parameter(const std::string& key, const std::string& where,
                                    const std::vector<std::string>& labels) {
  throw SpaceError("the parameters" + where + " name '" + key + "', which the space has no choice of (its choices" +
                   where + ": " + (labels.empty() ? "none" : join(labels)) + ")");
}

// Refuses a parameter the space has no choice of, at any level.
void check_known(const nlohmann::json& dims, const nlohmann::json& params, const std::string& where) {
  if (!params.is_object()) {
    throw SpaceError("the parameters" + where + " are " + params.dump() + ", not an object of {label: value}");
  }
  std::vector<std::string> labels;
  for (const auto& [label, d] : dims.items()) labels.push_back(label);
  for (const auto& [key, value] : params.items()) {
    if (key == "_name" || key == "name") continue;
    if (!dims.contains(key)) unknown_parameter(key, where, labels);
    if (!value.is_object()) continue;
    const auto chosen = value.value("_name", value.value("name", nlohmann::json()));
    for (const auto& v : dims[key]["_value"]) {
      if (!v.is_object() || v["_name"] != chosen) continue;
      nlohmann::json inner = v;
      inner.erase("_name");
      check_known(inner, value, " inside " + key + "=" + chosen.get<std::string>());
    }
  }
}

}  // namespace

namespace {

// One forward of zeros shaped [2, input_shape...] with every choice module running all its
// candidates: a SpaceError names the choice whose candidates disagree on the output shape.
void check_shapes(torch::nn::AnyModule& net, const std::vector<int64_t>& input_shape, bool token_inputs) {
  std::vector<int64_t> sizes{2};
  sizes.insert(sizes.end(), input_shape.begin(), input_shape.end());
  torch::NoGradGuard no_grad;
  checking = true;
  try {
    net.forward(torch::zeros(sizes, token_inputs ? torch::kLong : torch::kFloat));
  } catch (...) {
    checking = false;
    throw;
  }
  checking = false;
}

uint64_t mix(uint64_t a, uint64_t b) {  // splitmix64 of the pair
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// A path through `dims`: each choice's candidate (see SupernetImpl::sample), nested ones inside.
nlohmann::json sample_dims(const nlohmann::json& dims, uint64_t seed, int64_t step, bool fair) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [label, d] : dims.items()) {
    const auto& values = d["_value"];
    const auto n = static_cast<int64_t>(values.size());
    const uint64_t h = mix(seed, fnv1a(label));
    int64_t index = 0;
    if (fair) {  // step's place in its run of n steps, in that run's shuffled order
      std::mt19937_64 rng(mix(h, static_cast<uint64_t>(step / n)));
      std::vector<int64_t> order(static_cast<std::size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      for (int64_t i = n - 1; i > 0; --i)
        std::swap(order[static_cast<std::size_t>(i)], order[rng() % static_cast<uint64_t>(i + 1)]);
      index = order[static_cast<std::size_t>(step % n)];
    } else {
      std::mt19937_64 rng(mix(h, static_cast<uint64_t>(step)));
      index = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
    }
    const auto& c = values[static_cast<std::size_t>(index)];
    if (!c.is_object()) {
      out[label] = c;
      continue;
    }
    nlohmann::json inner = c;
    inner.erase("_name");
    out[label] = sample_dims(inner, seed, step, fair);
    out[label]["_name"] = c["_name"];
  }
  return out;
}

// `path`'s value of each choice of `dims` (nested ones too), checked: {label: candidate}.
void path_values(const nlohmann::json& dims, const nlohmann::json& path, const std::string& where,
                 std::map<std::string, nlohmann::json>& out) {
  for (const auto& [label, d] : dims.items()) {
    if (!path.contains(label)) no_value(label, where, d["_value"]);
    const nlohmann::json& v = path[label];
    const nlohmann::json name = v.is_object() ? v.value("_name", v.value("name", nlohmann::json())) : v;
    nlohmann::json plain = nlohmann::json::array();
    for (const auto& c : d["_value"]) plain.push_back(c.is_object() ? c["_name"] : c);
    const auto found = match(plain, name);
    if (!found) not_a_candidate("", label, where, name, d["_value"], "the supernet's");
    out[label] = *found;
    for (const auto& c : d["_value"]) {
      if (!c.is_object() || c["_name"] != *found) continue;
      nlohmann::json inner = c;
      inner.erase("_name");
      static const nlohmann::json kNone = nlohmann::json::object();
      path_values(inner, v.is_object() ? v : kNone, " inside " + label + "=" + found->get<std::string>(), out);
    }
  }
}

}  // namespace

struct ModelSpace::Impl {
  std::string name_;
  std::vector<int64_t> input_shape_;
  Builder build_;
  nlohmann::json space_;
  torch::nn::AnyModule supernet_;
  bool token_inputs_ = false;
};

ModelSpace::~ModelSpace() = default;

const std::string& ModelSpace::name() const { return impl_->name_; }
const nlohmann::json& ModelSpace::search_space() const { return impl_->space_; }
torch::nn::AnyModule ModelSpace::supernet() const { return impl_->supernet_; }

ModelSpace::ModelSpace(std::string name, std::vector<int64_t> input_shape, Builder build, bool token_inputs)
    : impl_(std::make_unique<Impl>()) {
  impl_->name_ = std::move(name);
  impl_->input_shape_ = std::move(input_shape);
  impl_->build_ = std::move(build);
  impl_->token_inputs_ = token_inputs;
  if (!impl_->build_) throw SpaceError("model space '" + impl_->name_ + "': no builder");
  if (impl_->input_shape_.empty())
    throw SpaceError("model space '" + impl_->name_ + "': no input shape to check it with");
  Space space(nullptr);
  impl_->supernet_ = impl_->build_(space);
  impl_->space_ = space.impl_->scopes_.front()->dims;
  check_shapes(impl_->supernet_, impl_->input_shape_, impl_->token_inputs_);
}

Supernet ModelSpace::one_shot(const nlohmann::json& allowed) const {
  if (!allowed.is_object())
    throw SpaceError("the allowed values are " + allowed.dump() + ", not an object of {label: value or [values]}");
  const auto known = labels();
  for (const auto& [label, values] : allowed.items()) {
    if (std::find(known.begin(), known.end(), label) == known.end()) unknown_parameter(label, "", known);
  }
  Space space(nullptr);
  space.impl_->allowed_ = &allowed;
  auto net = impl_->build_(space);
  check_shapes(net, impl_->input_shape_, impl_->token_inputs_);
  return Supernet(net, space.impl_->scopes_.front()->dims, std::move(space.impl_->switches_));
}

struct SupernetImpl::Impl {
  torch::nn::AnyModule net_;
  nlohmann::json space_;
  std::vector<std::pair<std::string, std::function<void(const nlohmann::json&)>>> switches_;
  nlohmann::json active_;
};

SupernetImpl::~SupernetImpl() = default;

const nlohmann::json& SupernetImpl::search_space() const { return impl_->space_; }
const nlohmann::json& SupernetImpl::active() const { return impl_->active_; }

SupernetImpl::SupernetImpl(torch::nn::AnyModule net, nlohmann::json space,
                           std::vector<std::pair<std::string, std::function<void(const nlohmann::json&)>>> switches)
    : torch::nn::Module("Supernet"), impl_(std::make_unique<Impl>()) {
  impl_->net_ = std::move(net);
  impl_->switches_ = std::move(switches);
  impl_->space_ = std::move(space);
  register_module("net", impl_->net_.ptr());
  activate(sample_dims(impl_->space_, 0, 0, true));
}

at::Tensor SupernetImpl::forward(const at::Tensor& x) { return impl_->net_.forward<at::Tensor>(x); }

void SupernetImpl::activate(const nlohmann::json& path) {
  check_known(impl_->space_, path, "");
  std::map<std::string, nlohmann::json> values;
  path_values(impl_->space_, path, "", values);
  for (const auto& [label, set] : impl_->switches_) {
    const auto it = values.find(label);
    if (it != values.end()) set(it->second);
  }
  impl_->active_ = path;
}

nlohmann::json SupernetImpl::sample(uint64_t seed, int64_t step, bool fair) const {
  return sample_dims(impl_->space_, seed, step, fair);
}

SupernetImpl* find_supernet(torch::nn::Module& module) {
  if (auto* s = dynamic_cast<SupernetImpl*>(&module)) return s;
  for (const auto& m : module.modules(false)) {
    if (auto* s = dynamic_cast<SupernetImpl*>(m.get())) return s;
  }
  return nullptr;
}

std::vector<std::string> ModelSpace::labels() const {
  std::vector<std::string> out;
  collect_labels(impl_->space_, out);
  return out;
}

torch::nn::AnyModule ModelSpace::freeze(const nlohmann::json& parameters) const {
  check_known(impl_->space_, parameters, "");
  Space space(&parameters);
  return impl_->build_(space);
}

}  // namespace baton::nas
