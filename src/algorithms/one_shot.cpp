// Single-path one-shot training: one path of the supernet per batch.
#include "baton/algorithms/one_shot.h"

#include <stdexcept>

#include <torch/torch.h>

#include "baton/core/state.h"
#include "baton/nas/space.h"

namespace baton {

bool SinglePath::match(Event event, const State& /*state*/) {
  return event == Event::kInit || event == Event::kBatchStart;
}

std::optional<int> SinglePath::apply(Event event, State& state, Logger& /*logger*/) {
  nas::SupernetImpl* supernet = state.model ? nas::find_supernet(*state.model) : nullptr;
  if (supernet == nullptr) {
    throw std::invalid_argument(
        "single_path: the model holds no one-shot supernet (a model space's, with model.one_shot: true)");
  }
  if (event == Event::kBatchStart) {
    supernet->activate(
        supernet->sample(options_.seed(), state.timestamp.batch(), options_.sampling() == PathSampling::kFair));
  }
  return std::nullopt;
}

std::string SinglePath::graph_blocker(const State& /*state*/) {
  return "samples a path of the supernet each batch: a CUDA graph would hold one";
}

}  // namespace baton
