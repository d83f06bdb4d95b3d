// Architectures of a trained supernet evaluated with inherited weights.
#include "baton/train/one_shot.h"

#include <stdexcept>

#include <torch/torch.h>

#include "baton/algorithms/weights.h"
#include "baton/core/state.h"
#include "baton/nas/space.h"

namespace baton {

std::map<std::string, double> evaluate_path(Trainer& trainer, const nlohmann::json& path, int64_t recalibrate_batches) {
  State& state = trainer.state();
  nas::SupernetImpl* supernet = state.model ? nas::find_supernet(*state.model) : nullptr;
  if (supernet == nullptr) {
    throw std::invalid_argument(
        "evaluate_path: the model holds no one-shot supernet (a model space's, with model.one_shot: true)");
  }
  supernet->activate(path);
  if (recalibrate_batches > 0) {
    const auto was = state.dataloader;  // an evaluation may have left its own there
    state.dataloader = trainer.options().train_dataloader();
    recompute_batch_norm_statistics(state, recalibrate_batches);
    state.dataloader = was;
  }
  std::map<std::string, double> out;
  for (const auto& [label, metrics] : trainer.eval()) {
    for (const auto& [name, value] : metrics) {
      std::string key = label;
      key += "/";
      key += name;
      out[key] = value;
    }
  }
  return out;
}

}  // namespace baton
