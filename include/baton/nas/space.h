// Model spaces (NNI's vocabulary): a network written with choices in it is its own search space.
//
//   baton::nas::ModelSpace space("tiny", {1, 28, 28}, [](baton::nas::Space& s) {
//     const auto width = s.value<int64_t>(baton::nas::ValueChoice("width", {16, 32, 64}));
//     auto net = torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(1, width, 3).padding(1)));
//     net->push_back(s.layer(baton::nas::LayerChoice("op", {
//         {"conv3x3", [&] { return torch::nn::AnyModule(torch::nn::Conv2d(
//                               torch::nn::Conv2dOptions(width, width, 3).padding(1))); }},
//         {"identity", [] { return torch::nn::AnyModule(torch::nn::Identity()); }}})));
//     net->push_back(torch::nn::Flatten());
//     net->push_back(torch::nn::Linear(width * 28 * 28, 10));
//     return torch::nn::AnyModule(net);
//   });
//   space.search_space();                                   // {"width": {"_type": "choice", ...}, "op": ...}
//   auto net = space.freeze({{"width", 32}, {"op", "conv3x3"}});  // plain modules, no choice left
//
// The builder is the network's constructor with its choices asked of `Space`. Building the space
// runs it once holding every candidate (the supernet): each choice is recorded under its label
// (a label met again is the same decision), a LayerChoice's candidates are built each in a scope of
// their own (a choice inside one is nested under it: NNI's `{_name: ..., ...}` format), and one
// forward of zeros shaped like the input checks that a LayerChoice's candidates, a Repeat's depths
// and an InputChoice's inputs agree on the output shape. freeze() runs it again with the values
// given, building only what they choose.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <nlohmann/json.hpp>

namespace baton::nas {

// A space written wrongly, or parameters that do not fit it: the message names the choice.
class SpaceError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// One of `candidates` (numbers or strings), chosen under `label`: a width, a kernel size, a ratio.
struct ValueChoice {
  ValueChoice(std::string label, nlohmann::json candidates);
  std::string label;
  nlohmann::json candidates;  // a non-empty array of numbers or strings, no two equal
};

// A module of a LayerChoice, by name.
struct Candidate {
  std::string name;
  std::function<torch::nn::AnyModule()> make;
};

// One of the candidate modules (each Tensor -> Tensor), chosen under `label`.
struct LayerChoice {
  LayerChoice(std::string label, std::vector<Candidate> candidates);
  std::string label;
  std::vector<Candidate> candidates;
};

// A block repeated one of `depths` times (block(i) builds the i-th, from 0), chosen under `label`.
struct Repeat {
  Repeat(std::string label, std::vector<int64_t> depths, std::function<torch::nn::AnyModule(int64_t)> block);
  std::string label;
  std::vector<int64_t> depths;  // each >= 1, increasing
  std::function<torch::nn::AnyModule(int64_t)> block;
};

// Which `chosen` of `inputs` earlier outputs feed a node, summed, averaged or concatenated along
// the channels (dimension 1); chosen under `label`.
struct InputChoice {
  enum class Reduction { kSum, kMean, kConcat };
  InputChoice(std::string label, int64_t inputs, int64_t chosen = 1, Reduction reduction = Reduction::kSum);
  std::string label;
  int64_t inputs;
  int64_t chosen;
  Reduction reduction;
};

// The module an InputChoice gives: forward(inputs) reduces the selected ones (in a frozen network
// a fixed selection; in a supernet the active one).
class InputSelectImpl : public torch::nn::Module {
 public:
  InputSelectImpl(InputChoice choice, std::vector<int64_t> selected);
  at::Tensor forward(const std::vector<at::Tensor>& inputs);
  const std::vector<int64_t>& selected() const { return selected_; }
  void select(std::vector<int64_t> selected) { selected_ = std::move(selected); }

 private:
  InputChoice choice_;
  std::vector<int64_t> selected_;
};
TORCH_MODULE(InputSelect);

class SupernetImpl;

// What a builder asks its choices of. In a space it records them (and answers with the first
// candidate, holding every candidate module); in freeze() it answers with the values given.
class Space {
 public:
  ~Space();
  template <typename T>
  T value(const ValueChoice& choice) {
    return resolve(choice).get<T>();
  }
  nlohmann::json resolve(const ValueChoice& choice);
  torch::nn::AnyModule layer(const LayerChoice& choice);
  torch::nn::AnyModule repeat(const Repeat& choice);
  InputSelect input(const InputChoice& choice);

  // Whether this builds the supernet (every candidate) rather than a frozen network.
  bool supernet() const;

 private:
  friend class ModelSpace;
  using Switch = std::function<void(const nlohmann::json&)>;
  explicit Space(const nlohmann::json* parameters);
  nlohmann::json allowed(const std::string& label, const std::string& kind, const nlohmann::json& candidates) const;
  nlohmann::json record(const std::string& label, const std::string& kind, nlohmann::json candidates);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A one-shot supernet (SPOS, Guo et al. 2020): every candidate's weights, shared by the paths
// through it, one path active at a time (ModelSpace::one_shot makes it). A ValueChoice is fixed
// to one value (a width's weights are not sliced between its candidates).
class SupernetImpl : public torch::nn::Module {
 public:
  ~SupernetImpl() override;
  SupernetImpl(torch::nn::AnyModule net, nlohmann::json space,
               std::vector<std::pair<std::string, std::function<void(const nlohmann::json&)>>> switches);
  // The active path's output.
  at::Tensor forward(const at::Tensor& x);
  // The choices its paths take (NNI's format, as ModelSpace::search_space, with only the allowed
  // candidates).
  const nlohmann::json& search_space() const;
  // Makes `path` ({label: value}, as ModelSpace::freeze takes) the active one. Throws SpaceError
  // for a label missing or unknown, or a value that is not one of the allowed candidates.
  void activate(const nlohmann::json& path);
  const nlohmann::json& active() const;
  // The path of training step `step`, a function of (seed, step) alone: each choice uniformly at
  // random, or `fair` (FairNAS, Chu et al. 2021: each run of n steps takes each of a choice's n
  // candidates once, in a random order).
  nlohmann::json sample(uint64_t seed, int64_t step, bool fair) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
TORCH_MODULE(Supernet);

// The one-shot supernet inside `module` (a Model holding one), or nullptr.
SupernetImpl* find_supernet(torch::nn::Module& module);

using Builder = std::function<torch::nn::AnyModule(Space&)>;

class ModelSpace {
 public:
  ~ModelSpace();
  // Builds the supernet (every candidate) once and checks it with a forward of zeros shaped
  // [2, input_shape...] (of type long with `token_inputs`: a language model's token indices).
  // Throws SpaceError naming the choice that is wrong.
  ModelSpace(std::string name, std::vector<int64_t> input_shape, Builder build, bool token_inputs = false);

  const std::string& name() const;
  // The search space in NNI's format, what exec's SearchSpace::from_json reads: a choice per label,
  // a LayerChoice's candidates with choices inside them as `{_name: candidate, label: {...}}`.
  const nlohmann::json& search_space() const;
  // The labels, by name (a LayerChoice's nested ones after it).
  std::vector<std::string> labels() const;
  // A network with no choice left, for `parameters` as a strategy samples them ({label: value},
  // a nested choice's value `{_name: candidate, label: value}`; `name` is taken for `_name`, as
  // recipe keys spell it). Throws SpaceError for a label missing or unknown, or a value that is not
  // one of its candidates.
  torch::nn::AnyModule freeze(const nlohmann::json& parameters) const;
  // The supernet built when the space was: every candidate's weights.
  torch::nn::AnyModule supernet() const;
  // A supernet for one-shot search, built anew: `allowed` ({label: value or [values]}) narrows
  // choices to some of their candidates (a choice not named keeps all); each ValueChoice must be
  // left one value. Throws SpaceError naming a ValueChoice with several, an unknown label or a
  // value that is not a candidate.
  Supernet one_shot(const nlohmann::json& allowed = nlohmann::json::object()) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::nas
