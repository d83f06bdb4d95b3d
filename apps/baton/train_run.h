// baton train as a function: what a trial process runs, and what a fused trial (baton search
// --fuse, fused.cpp) runs on a thread of the search's own process.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/time.h"

namespace baton {
class FusedData;
}  // namespace baton

namespace baton::cli {

struct TrainArgs {
  std::string recipe;
  std::vector<std::string> sets;
  std::string run_dir;
  bool autoresume = false;
  bool overwrite = false;
  bool profile = false;
};

// How a run is a search's trial, and where it speaks. A trial process takes it from its environment
// (BATON_TRIAL_*: run_link_from_environment) and prints to its standard output; a fused trial is
// given it by the search.
struct RunLink {
  std::FILE* out = stdout;    // what the run prints
  nlohmann::json parameters;  // the trial's parameters, applied after --set (null: not a trial)
  // The metrics the trial reports: the first one's value at each evaluation, all of them (and the
  // constraints') at the end. Empty: nothing is reported.
  std::vector<std::string> metrics, constraints;
  std::optional<Time> until;  // population-based training's interval: the run pauses there
  std::string trial_id;       // names the trial's MLflow run
  std::string mlflow_parent;  // the search's MLflow run ("": none)
  // A trial protocol line: {"intermediate": v, "step": s} or {"final": v, ...}.
  std::function<void(const nlohmann::json&)> report;
  // Nonzero: the run was asked to stop (the signal's number); it stops after the batch.
  std::function<int()> stop_signal;
  FusedData* fused = nullptr;  // what a fused trial shares with the others (the data, the batches)
  bool own_signals = true;     // SIGTERM and SIGINT stop this run (a fused trial's are the search's)
};

RunLink run_link_from_environment();
// A trial protocol line as a trial prints it ("baton: {...}"), flushed: the search reads it.
void print_protocol_line(std::FILE* out, const nlohmann::json& line);
// Trains `args.recipe` as baton train does; returns its exit code. Throws RecipeError (and the
// errors of the data, the model) for bad input, before anything is written; a fused trial whose
// metric was never logged throws std::runtime_error saying so.
int run_training(const TrainArgs& args, const RunLink& link);

}  // namespace baton::cli
