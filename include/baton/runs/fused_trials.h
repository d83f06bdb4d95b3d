// Fused trials (`baton search --fuse K`) as a library call: up to K trials of a recipe's search
// train at once in the search's own process, each on a thread of its own, over one data stream
// (FusedData: the data sets loaded once, each batch read and prepared once for all of them). Each
// is still a trial of its own: its entry in the storage, its run folder (RUN_DIR/trials/ID:
// checkpoints, metrics, stdout.log), its events; the search stops or prunes it alone (it stops
// after its batch). What a separate process gives is given up: a crash of one trial ends the
// search (--resume runs it again).
//
//   baton::ExperimentOptions options = ...;  // a recipe's search
//   auto fused = baton::use_fused_trials(options, 4);
//   ... run the experiment ...
//   baton::write_fused_report(*fused, 4, options.run_dir());
#pragma once

#include <filesystem>
#include <memory>

namespace baton {

class ExperimentOptions;
class FusedData;

// `options` run up to K trials of their recipe at once in this process (engine "fused", parallel
// K, a trial function that trains the recipe with train_recipe); returns the FusedData they share.
// Throws std::invalid_argument saying why for what cannot be fused (a --command, a space that
// varies the data, the batch size, the seed or the model space, --parallel, --devices, --join,
// --trial-timeout, pbt, spos).
std::shared_ptr<FusedData> use_fused_trials(ExperimentOptions& options, int k);
// RUN_DIR/fused.json: the batches made and taken, the seconds spent making them (the data
// pipeline's share), this process's CPU seconds; and a line on standard output saying so.
void write_fused_report(const FusedData& fused, int k, const std::filesystem::path& run_dir);

}  // namespace baton
