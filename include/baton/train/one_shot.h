// Single-path one-shot search's second half (SPOS, Guo et al. 2020): architectures of a trained
// supernet (model.one_shot: true, trained with the single_path algorithm) evaluated with the
// weights they inherit, no training of their own.
//
//   baton::Trainer trainer(run.options);  // its model a supernet, its algorithms single_path
//   trainer.fit();
//   auto metrics = baton::evaluate_path(trainer, {{"stage1_op", "conv3x3"}, ...}, 10);
//   metrics["eval/accuracy"];
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "baton/train/trainer.h"

namespace baton {

// Makes `path` ({label: value}, nas::SupernetImpl::activate) the supernet's active path, computes
// BatchNorm statistics for it anew over the first `recalibrate_batches` training batches (in order:
// every path sees the same ones; 0: the supernet's statistics as they are), and evaluates it on
// the trainer's evaluators: {"LABEL/METRIC": value}. Throws std::invalid_argument when the model
// holds no supernet, nas::SpaceError for a path that does not fit it.
std::map<std::string, double> evaluate_path(Trainer& trainer, const nlohmann::json& path, int64_t recalibrate_batches);

}  // namespace baton
