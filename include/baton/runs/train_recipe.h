// `baton train` as a library call: a recipe trained into its run folder, as the command does it
// (the folder claimed, resumed, started over or refused; recipe.yaml, metrics, checkpoints,
// model.pt and summary.json written; a search's trial reporting its metrics).
//
//   baton::TrainRequest request;
//   request.recipe = "recipes/fashion_mnist.yaml";
//   request.sets = {"max_duration=1ep"};
//   request.run_dir = "runs/exp1";
//   int code = baton::train_recipe(request);  // 0 done; 128 + N stopped by signal N
//
// A search's trial process takes its link from the environment the search set
// (run_link_from_environment); a fused trial (runs/fused_trials.h) is given one by the search.
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
struct ModelSummary;
struct TrainingRun;

struct TrainRequest {
  std::string recipe{};             // the recipe file
  std::vector<std::string> sets{};  // overrides, "key.path=value", applied in order
  std::string run_dir{};            // "" : runs/<run_name>
  bool autoresume = false;          // continue the run in run_dir (RunFolder::Existing::kResume)
  bool overwrite = false;           // start over, the previous run moved aside (kStartOver)
  bool profile = false;             // batches 2-6 as a Chrome trace in RUN_DIR/traces
};

// How a run is a search's trial, and where it speaks. A trial process takes it from its environment
// (BATON_TRIAL_*: run_link_from_environment) and prints to its standard output; a fused trial is
// given it by the search.
struct RunLink {
  std::FILE* out = stdout;    // what the run prints
  nlohmann::json parameters;  // the trial's parameters, applied after the request's sets (null: not a trial)
  // The metrics the trial reports: the first one's value at each evaluation, all of them (and the
  // constraints') at the end. Empty: nothing is reported.
  std::vector<std::string> metrics, constraints;
  std::optional<Time> until;  // population-based training's interval: the run pauses there
  std::string trial_id;       // names the trial's MLflow run
  std::string mlflow_parent;  // the search's MLflow run ("": none)
  // A trial protocol line: {"intermediate": v, "step": s} or {"final": v, ...}.
  std::function<void(const nlohmann::json&)> report;
  // Nonzero: the run was asked to stop (the signal's number); it stops after the batch. Default:
  // the SIGTERM or SIGINT this process received once `own_signals` installed its handler.
  std::function<int()> stop_signal;
  FusedData* fused = nullptr;  // what a fused trial shares with the others (the data, the batches)
  // SIGTERM and SIGINT stop this run after its batch (a checkpoint is written), a second one exits
  // at once (a fused trial's signals are the search's).
  bool own_signals = true;
};

// BATON_TRIAL_PARAMETERS, _METRIC, _CONSTRAINTS, _UNTIL, _ID and BATON_MLFLOW_PARENT_RUN_ID, as a
// search's process engine sets them; protocol lines printed to stdout. Throws RecipeError for a
// malformed value.
RunLink run_link_from_environment();
// A trial protocol line as a trial prints it ("baton: {...}"), flushed: the search reads it.
void print_protocol_line(std::FILE* out, const nlohmann::json& line);
// A search trial's parameters as recipe overrides ("key.path=value", after `prefix`): nested
// objects set dotted keys, and a nested choice's "_name" sets KEY.name.
void flatten_parameters(const nlohmann::json& j, const std::string& prefix, std::vector<std::string>& sets);

// Trains `request.recipe` as `baton train` does; returns its exit code (0, 1 when a trial's metric
// was never logged, 128 + N when stopped by signal N). Throws RecipeError (and the errors of the
// data, the model) for bad input, before anything is written; a fused trial whose metric was never
// logged throws std::runtime_error saying so.
int train_recipe(const TrainRequest& request, const RunLink& link = {});

// The number of the SIGTERM or SIGINT this process received since a run installed its handlers
// (RunLink::own_signals), 0 if none.
int stop_signal_received();
// SIGTERM and SIGINT call `handler` from now on (a run or a search stops at a safe point).
void on_stop_signals(void (*handler)(int));

// The summary of the model a recipe built (its FLOPs from two training examples, on the model's
// device), as `baton train` prints it and `baton summary` shows it.
ModelSummary summarize_run(const TrainingRun& run);

}  // namespace baton
