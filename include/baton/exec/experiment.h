// Experiment: what `baton search` runs, for a C++ program too (NNI's Experiment): a space, trials
// that run a command or train a recipe, a strategy, a storage that survives a crash (resumed, or
// shared by workers that join it), the middlewares, a status line and RUN_DIR/summary.json.
//
//   baton::Experiment experiment(baton::ExperimentOptions().space("space.yaml").command("./trial.sh")
//                                    .trials(20).parallel(2).run_dir("runs/s"));
//   baton::ExperimentResult result = experiment.run();   // result.best: the best trial
//
// Each option is the `baton search` flag of the same name (docs/search.md says what each does);
// errors in them name the flag.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/options.h"
#include "baton/exec/engine.h"
#include "baton/exec/pareto.h"
#include "baton/exec/trial.h"

namespace baton {

class ExperimentOptions {
 public:
  using Stream = std::FILE*;
  using NamedOptions = std::vector<std::pair<std::string, nlohmann::json>>;

 private:
  BATON_ARG(std::string, space);  // the search space: NNI's format, a YAML or JSON file
  // The search space itself, instead of reading `space` (which then only names it): a model
  // space's, say. Null: read the file.
  BATON_ARG(nlohmann::json, space_definition);
  // "process" (or empty): trials run, a command's or a recipe's; "table:FILE": trials are answered
  // from the benchmark table FILE (table.h) in this process, at no training cost (no --command or
  // --recipe; `parallel` trials at once, as workers of equal speed).
  BATON_ARG(std::string, engine);  // experiment_engine_forms() lists what it may be
  // Trials run by this function in this process, `parallel` at once (one-shot search: architectures
  // evaluated on a supernet; fused trials); `recipe` is then kept for the record (baton nas export)
  // and `engine` names the function in the stored meta. Unset: `engine` decides.
  BATON_ARG(TrialFunction, trial_function);
  BATON_ARG(std::string, command);            // a trial is this command (sh -c), or
  BATON_ARG(std::string, recipe);             // a trial trains this recipe: `TRAINER train RECIPE --set k=v`...
  BATON_ARG(std::string, trainer) = "baton";  // the program that trains a recipe's trial
  // With a recipe: what starts a trial's training, before `TRAINER train …` (sh -c words): "mpirun
  // -np 4" makes each trial a job of 4 ranks (data-parallel, or sharded as its recipe says).
  BATON_ARG(std::string, launcher);
  BATON_ARG(std::string, metric) = "eval/accuracy";  // with a recipe: the metric a trial reports
  // Several objectives, instead of metric and maximize: "METRIC:max" or "METRIC:min" each, in the
  // order a trial reports them (a recipe's: any metric it logs, or `params`, the model's size).
  BATON_ARG(std::vector<std::string>, objectives);
  // "METRIC<=VALUE" or "METRIC>=VALUE": a trial that breaks one is infeasible (never the best nor on
  // the Pareto front); a recipe's trial reports the metric, a command's reports them in this order.
  BATON_ARG(std::vector<std::string>, constraints);
  BATON_ARG(std::vector<std::string>, sets);  // with a recipe: overrides for every trial
  BATON_ARG(int64_t, trials) = 10;            // in the whole search (a resumed one's count)
  BATON_ARG(int, parallel) = 0;               // trials at once (this worker's); 0: 1, or one per slot
  // A device per trial: the devices this worker deals out, `devices_per_trial` to each trial (it
  // sees only those: CUDA_VISIBLE_DEVICES), and CPU threads per trial on cores of its own.
  BATON_ARG(std::vector<std::string>, devices);
  BATON_ARG(int, devices_per_trial) = 0;                  // 0: 1 with devices
  BATON_ARG(int, threads_per_trial) = 0;                  // 0: not set
  BATON_ARG(std::string, strategy) = "tpe";               // make_strategy's names
  BATON_ARG(std::vector<std::string>, strategy_options);  // KEY=VALUE, as --strategy-option
  BATON_ARG(bool, maximize) = true;                       // --direction maximize; false: minimize
  BATON_ARG(uint64_t, seed) = 0;
  BATON_ARG(std::string, storage);  // Default: sqlite://RUN_DIR/search.db
  BATON_ARG(std::filesystem::path, run_dir) = "runs/search";
  BATON_ARG(bool, resume) = false;       // continue the search in the storage (unfinished trials again)
  BATON_ARG(bool, new_study) = false;    // move a SQLite study and its trials' folders aside first
  BATON_ARG(bool, join) = false;         // one worker of a shared search (implied under mpirun/srun)
  BATON_ARG(double, heartbeat) = 2.0;    // with join: seconds between heartbeats (silent 10x: requeued)
  BATON_ARG(double, trial_timeout) = 0;  // seconds before a trial is stopped and failed (0: none)
  BATON_ARG(int, retries) = 0;           // a failed trial runs again up to this many times
  BATON_ARG(int, median_stop) = 0;       // median stopping once this many trials completed (0: off)
  BATON_ARG(int64_t, asha) = 0;          // successive halving's first rung (0: off)
  BATON_ARG(int, brackets) = 1;          // with asha: Hyperband's brackets
  BATON_ARG(Stream, out) = stdout;       // the status line and messages; nullptr: none
  // More middlewares by name (make_middleware, baton/exec/registry.h) with their options, outermost
  // last: {{"budget", {{"max_wall_s", 3600}}}}.
  BATON_ARG(NamedOptions, middlewares);
};

// Bad options, a space or storage that cannot be read, a search that cannot be resumed as asked:
// what the user gave (`baton search` exits 2 with the message).
class ExperimentError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// What a recipe's trial prints (stderr) when the search's metric was never logged: the search
// stops at the first such trial, with the rest of the line as its error.
inline constexpr const char* kUnknownTrialMetric = "the search's metric was never logged: ";

// What a search optimises: its --objective flags (or --metric and --direction) and --constraint
// flags, with the objectives' metrics in order. Throws ExperimentError for a bad one.
Objectives search_objectives(const ExperimentOptions& o);
// The names of the metrics a search's trial reports: its objectives' and its constraints'.
std::pair<std::vector<std::string>, std::vector<std::string>> reported_metrics(const Objectives& objectives);

// What ExperimentOptions::engine may be, from the registry of engine kinds: "process (trials
// run) or table:FILE (...)", for help and errors.
std::string experiment_engine_forms();

// The objectives and constraints of a search as its storage keeps them (meta "search"): one
// objective (its direction) for a search written before several were possible.
Objectives stored_objectives(const nlohmann::json& search_meta);

struct ExperimentResult {
  std::optional<Trial> best;      // the best feasible trial (the first objective's; nullopt: none finished with one)
  int stopped_by = 0;             // the signal stop() was given (0: the search ran to its end)
  int interrupted = 0;            // trials stopped with it (a resume runs them again)
  std::filesystem::path summary;  // RUN_DIR/summary.json (not written when stopped)
  std::vector<Trial> pareto{};    // several objectives: the feasible trials no other one dominates, by id
};

class Experiment {
 public:
  // Checks the options, reads the space, makes the strategy, opens the storage (a new study, a
  // resumed one, or a shared one to join), the engine and the middlewares. Nothing runs yet.
  // Throws ExperimentError.
  explicit Experiment(ExperimentOptions options);
  ~Experiment();
  Experiment(const Experiment&) = delete;
  Experiment& operator=(const Experiment&) = delete;

  // Runs the trials; returns when they are done, or soon after stop(): then the running trials'
  // process groups are ended and stored as interrupted (resume runs them again).
  ExperimentResult run();
  // Ends run() early, as signal `why` would (0: SIGTERM). Async-signal-safe: a SIGTERM or SIGINT
  // handler may call it.
  void stop(int why) noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
