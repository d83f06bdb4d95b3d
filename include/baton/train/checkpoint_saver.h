// CheckpointSaver: writes checkpoints during fit, on the *_checkpoint events (so a checkpoint can
// hold that interval's evaluation) and at fit end, and keeps checkpoints/latest pointing at the
// newest. The Trainer adds one when TrainerOptions::save_folder is set.
//
// The snapshot is taken on the training thread; the file is written on a background thread, so
// training does not wait for the disk (the next save waits for the previous write).
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "baton/core/callback.h"
#include "baton/core/options.h"
#include "baton/core/state_dict.h"
#include "baton/core/time.h"

namespace baton {

class CheckpointSaverOptions {
  BATON_ARG(std::string, folder);
  BATON_ARG(Time, interval) = Time::from_epoch(1);
  BATON_ARG(std::string, filename) = "ep{epoch}-ba{batch}.ckpt";
  BATON_ARG(int, num_checkpoints_to_keep) = -1;
  // Keep the `top_k` best checkpoints by `monitor` ("eval/val/accuracy") plus the latest, and point
  // best.ckpt at the best; a checkpoint is also written after each evaluation of the monitor's set.
  // 0: off (num_checkpoints_to_keep applies).
  BATON_ARG(int, top_k) = 0;
  BATON_ARG(std::string, monitor);
  BATON_ARG(bool, greater_is_better) = true;
  // false: a rank that takes each snapshot with the others (sharded training gathers the shards
  // then) and writes nothing; its decisions are the writer's, made from the same state.
  BATON_ARG(bool, write) = true;
};

// The link to the best checkpoint (save_top_k), beside `latest`.
inline constexpr const char* kBestCheckpoint = "best.ckpt";

class CheckpointSaver : public Callback {
 public:
  using Snapshot = std::function<StateDict()>;
  using Meta = std::function<nlohmann::json()>;
  // Creates the folder. Throws CheckpointError naming it when it cannot, std::invalid_argument for
  // a filename check_checkpoint_filename refuses.
  CheckpointSaver(CheckpointSaverOptions options, Snapshot snapshot, Meta meta);
  ~CheckpointSaver() override;

  void batch_checkpoint(State& state, Logger& logger) override;
  void epoch_checkpoint(State& state, Logger& logger) override;
  void fit_end(State& state, Logger& logger) override;
  void eval_end(State& state, Logger& logger) override;
  void close(State& state, Logger& logger) override;

  // save_format: sharded: called on every rank at each save with the checkpoint's path, after the
  // snapshot and before the index is written: writes this rank's file of the optimizer's state and
  // returns the layout the index keeps (under "sharded_optimizer_state"). Collective.
  using ShardWriter = std::function<nlohmann::json(const std::string& path)>;
  void set_shard_writer(ShardWriter writer);
  // Snapshots now and writes in the background; returns the file's path ("" when it does not write).
  std::string save(const State& state);
  // Waits for the write in flight; rethrows its error.
  void wait();
  // Paths written by this saver, oldest first (those not deleted).
  const std::vector<std::string>& written() const;
  // A resumed run's saver takes the folder's checkpoints (those its filename makes) as its own,
  // oldest first, so that num_checkpoints_to_keep counts them too; with top_k, ranked by the
  // monitored value each one's metadata holds.
  void adopt_existing();
  // With top_k: the kept checkpoints that have a monitored value, best first.
  std::vector<std::pair<std::string, double>> ranked() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  // Whether the last save was at this timestamp (epoch, batch).
  bool saved_now(const State& state) const;
  bool rank_now(const State& state) const;
  // top_k: the ranked checkpoints (path, value, order written), and the batch after which the
  // monitor's evaluation set last ran (a checkpoint is ranked only with a value of its own weights).
  struct Ranked {
    std::string path;
    double value;
    int64_t batch;  // the weights' batch
    int64_t order;
  };
  // The files to delete after `path` is written: keeps the top_k ranked plus the latest.
  std::vector<std::string> keep_top_k(const std::string& path, std::optional<double> value, int64_t batch);
};

// Points `folder`/latest (a relative symlink) at `file` atomically.
void point_latest_at(const std::string& folder, const std::string& file);

// The checkpoint to resume from in `folder`: latest when it is good; else the newest good one (a
// *.ckpt, or any file `filename_pattern` — the run's save_filename — makes; saying so in one
// warning); "" when there is none. Throws CheckpointError naming them when there are checkpoints
// but none can be read: starting over would overwrite them.
std::string find_resumable_checkpoint(const std::string& folder, const std::string& filename_pattern = "");

// The names of `folder`'s checkpoints: the files `filename_pattern` (a save_filename) makes, and
// *.ckpt; not `latest`, not hidden temporary files.
std::vector<std::string> checkpoint_names(const std::string& folder, const std::string& filename_pattern);

// Checks a save_filename pattern ({epoch}, {batch}, {run_name} filled in) names a file of its own
// in the checkpoint folder: not "latest" (the link to the newest), no folder part (a '/' or
// ".."), not hidden (".name": the saver's temporary files). Throws std::invalid_argument
// ("'<filename>': why, and the fix"); nor best.ckpt, the link to the best (save_top_k).
void check_checkpoint_filename(const std::string& filename);

}  // namespace baton
