// Single-path one-shot search (SPOS, Guo et al. 2020) of a model space, as `baton search
// --strategy spos` runs it. One supernet holding every candidate's weights trains one path per
// batch; architectures are then evaluated with the weights they inherit (BatchNorm statistics
// recomputed on a few batches), suggested by regularized evolution, each a trial in the search's
// storage; the best is trained again from scratch with the recipe. Writes RUN_DIR/supernet.ckpt
// (a resumed search reuses it), RUN_DIR/model_space.json and RUN_DIR/spos.json (the phases' times
// and results).
//
//   baton::use_model_space("cnn_space", options);  // runs/model_space_search.h
//   baton::one_shot_search(options, [](baton::Experiment& e, const baton::ExperimentOptions&,
//                                      baton::ExperimentResult& r) { r = e.run(); return r.best ? 0 : 1; });
#pragma once

#include <functional>

namespace baton {

class Experiment;
class ExperimentOptions;
struct ExperimentResult;

// Runs the one-shot search `options` describe (a model space's search, use_model_space; spos's
// --strategy-option settings: supernet_duration, sampling, recalibrate_batches, retrain,
// population, sample_size, mutation_prob) and returns its exit code. `run` runs the evolution's
// experiment (the caller's signals, MLflow run) and returns its exit code. Throws
// std::invalid_argument, RecipeError or ExperimentError for bad input, before the supernet trains.
int one_shot_search(ExperimentOptions options,
                    const std::function<int(Experiment&, const ExperimentOptions&, ExperimentResult&)>& run);

}  // namespace baton
