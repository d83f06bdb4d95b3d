// `baton search` as a library call: a search of a recipe's (or a command's) trials, as the command
// runs it — a model space's (use_model_space), fused trials (use_fused_trials), single-path
// one-shot (a one-shot strategy: spos); the search's own MLflow run when the recipe logs to MLflow (its
// trials' runs its children); SIGTERM and SIGINT stop it (its running trials stored as
// interrupted, for options.resume() to run again), a second signal exits at once.
//
//   baton::SearchRequest request;
//   request.options.recipe("recipes/fashion_mnist.yaml").space("space.yaml").trials(8);
//   request.options.trainer("/usr/local/bin/baton");  // the program a trial process runs
//   int code = baton::run_search(request);            // RUN_DIR/search.db, RUN_DIR/summary.json
#pragma once

#include <string>
#include <vector>

#include "baton/exec/experiment.h"

namespace baton {

struct SearchRequest {
  ExperimentOptions options;  // the search (the CLI's flags are its options, by the same names)
  std::string model_space;    // "": the options' space; else the zoo's model space by this name
  int fuse = 0;               // > 0: up to this many trials at once in this process (fused)
};

// Runs the search; returns its exit code: 0 (a best trial), 1 (no trial finished), 128 + N (stopped
// by signal N). Throws std::invalid_argument (ExperimentError among them) or RecipeError for bad
// input — flags that do not go together, a space, a recipe, --devices this machine does not have —
// before a trial runs.
int run_search(SearchRequest request);

// What --strategy may name: exec's trial strategies (strategy_names()), then the one-shot searches
// that train a supernet rather than trials (spos). Every list of strategies a user sees (help,
// errors, docs) is this one.
std::vector<std::string> search_strategy_names();
// Whether `strategy` is a one-shot search (run_search runs it itself, not as an Experiment).
bool is_one_shot_search(const std::string& strategy);

}  // namespace baton
