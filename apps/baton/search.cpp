// baton search: run many trials of a command or a recipe, suggested by a strategy (an Experiment,
// include/baton/exec/experiment.h: this file parses the flags).
// baton trials ls|show|pareto: read a search's storage. baton nas export: a trial as a recipe.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "baton/core/options.h"
#include "baton/exec/experiment.h"
#include "baton/exec/search.h"
#include "baton/exec/storage.h"
#include "baton/io/file.h"
#include "baton/io/write.h"
#include "baton/runs/search_run.h"
#include "baton/runs/train_recipe.h"
#include "baton/train/recipe.h"
#include "baton/train/recipe_file.h"
#include "commands.h"

namespace baton::cli {
namespace {

class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("baton") : p.string();
}

nlohmann::json trial_row(const Trial& t) {
  nlohmann::json inter = nlohmann::json::array();
  for (const auto& v : t.metrics.intermediate) inter.push_back({{"step", v.step}, {"value", v.value}});
  nlohmann::json row = {{"id", t.id},
                        {"status", to_string(t.status)},
                        {"parameters", t.parameters},
                        {"final", t.metrics.final ? nlohmann::json(*t.metrics.final) : nlohmann::json()},
                        {"intermediate", inter},
                        {"worker", t.worker},
                        {"started_at", t.started_at},
                        {"ended_at", t.ended_at}};
  if (!t.metrics.values.empty()) row["values"] = t.metrics.values;
  if (!t.metrics.constraints.empty()) row["constraints"] = t.metrics.constraints;
  if (t.metrics.paused_at) row["paused_at"] = *t.metrics.paused_at;
  row["exploits"] = nlohmann::json::array();  // population-based training: each state it copied
  for (const auto& e : t.exploits) row["exploits"].push_back(e.to_json());
  return row;
}

// A trial's final value, or its values ("0.91, 120000"); "-" when none.
std::string final_text(const Trial& t) {
  const auto values = t.objectives();
  if (values.empty()) return "-";
  std::string out;
  for (double v : values) {
    char number[32];
    std::snprintf(number, sizeof number, "%.6g", v);
    out += (out.empty() ? "" : ", ") + std::string(number);
  }
  return out;
}

std::unique_ptr<TrialStorage> open_existing(const std::string& url) {
  std::string path = url;
  if (path.rfind("sqlite:///", 0) == 0)
    path = path.substr(9);
  else if (path.rfind("sqlite:", 0) == 0)
    path = path.substr(7);
  if (url.find("://") == std::string::npos || url.rfind("sqlite:", 0) == 0) {
    if (!std::filesystem::exists(path))
      throw BadInput(path + ": no such storage file (the --storage of a search, or RUN_DIR/search.db)");
  }
  try {
    return open_storage(url);
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  } catch (const std::runtime_error& e) {  // a corrupt file, a server that refuses
    throw BadInput(e.what());
  }
}

int run_trials_ls(const std::string& url, bool json) {
  auto storage = open_existing(url);
  const auto trials = storage->load_trials();
  if (json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& t : trials) rows.push_back(trial_row(t));
    std::printf("%s\n", rows.dump().c_str());
    return 0;
  }
  const bool shared = std::any_of(trials.begin(), trials.end(), [](const Trial& t) { return !t.worker.empty(); });
  // Population-based training: where each trial took another's state ("from 3 at 1000ba").
  auto lineage = [](const Trial& t) {
    std::string out;
    for (const auto& e : t.exploits) out += "  <- " + std::to_string(e.from) + " at " + e.at;
    return out;
  };
  std::printf("%6s  %-11s  %12s  %6s  %s%s\n", "id", "status", "final", "steps", shared ? "worker              " : "",
              "parameters");
  for (const auto& t : trials) {
    const std::string fin = final_text(t);
    char worker[64] = "";
    if (shared) std::snprintf(worker, sizeof worker, "%-20s", t.worker.empty() ? "-" : t.worker.c_str());
    std::printf("%6lld  %-11s  %12s  %6zu  %s%s%s\n", static_cast<long long>(t.id), to_string(t.status).c_str(),
                fin.c_str(), t.metrics.intermediate.size(), worker, t.parameters.dump().c_str(), lineage(t).c_str());
  }
  return 0;
}

int run_trials_show(const std::string& url, int64_t id) {
  auto storage = open_existing(url);
  for (const auto& t : storage->load_trials()) {
    if (t.id == id) {
      std::printf("%s\n", t.to_json().dump(2).c_str());
      return 0;
    }
  }
  throw BadInput("no trial " + std::to_string(id) + " in " + url);
}

// baton trials pareto: the stored search's Pareto front (its feasible trials no other dominates).
int run_trials_pareto(const std::string& url, bool json) {
  auto storage = open_existing(url);
  const auto meta = storage->meta("search").value_or(nlohmann::json::object());
  const Objectives objectives = stored_objectives(meta);
  if (objectives.size() < 2) {
    throw BadInput("the search in " + url +
                   " has one objective: its best is in `baton trials ls` and summary.json (a Pareto front needs "
                   "several --objective flags)");
  }
  const auto front = pareto_front(storage->load_trials(), objectives);
  if (json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& t : front) rows.push_back(trial_row(t));
    std::printf("%s\n", nlohmann::json{{"objectives", meta["objectives"]}, {"pareto", rows}}.dump().c_str());
    return 0;
  }
  std::string names;
  for (std::size_t i = 0; i < objectives.size(); ++i)
    names += (names.empty() ? "" : ", ") + objectives.metrics[i] + (objectives.maximize[i] ? " max" : " min");
  std::printf("Pareto front: %zu trial(s) (%s)\n%6s  %-28s  %s\n", front.size(), names.c_str(), "id", "values",
              "parameters");
  for (const auto& t : front) {
    std::printf("%6lld  %-28s  %s\n", static_cast<long long>(t.id), final_text(t).c_str(), t.parameters.dump().c_str());
  }
  return 0;
}

// baton nas export: trial `id` (nullopt: the best) of a recipe's search as a recipe of its own:
// the search's recipe with its --set overrides and the trial's parameters (a model space's
// architecture: model.name and model.arch), which `baton train OUT` trains again.
int run_nas_export(const std::string& url, std::optional<int64_t> id, const std::string& out) {
  check_output(out, "--out", {storage_file(url)});  // never over the search's storage
  auto storage = open_existing(url);
  const auto meta = storage->meta("search").value_or(nlohmann::json::object());
  const std::string recipe = meta.is_object() ? meta.value("recipe", std::string()) : std::string();
  if (recipe.empty()) {
    throw BadInput("the search in " + url +
                   " did not train a recipe (a --command search, or one stored before baton kept the recipe): "
                   "there is no recipe to export");
  }
  const auto trials = storage->load_trials();
  std::optional<Trial> trial = id ? std::nullopt : best_trial(trials, stored_objectives(meta));
  for (const auto& t : trials) {
    if (id && t.id == *id) trial = t;
  }
  if (!trial) {
    throw BadInput(id ? "no trial " + std::to_string(*id) + " in " + url + " (baton trials ls --storage " + url + ")"
                      : "the search in " + url + " has no trained trial yet: give --trial N");
  }
  std::vector<std::string> sets = meta.value("sets", std::vector<std::string>{});
  check_output(out, "--out", {storage_file(url), recipe});  // nor over the search's recipe
  flatten_parameters(trial->parameters, "", sets);
  std::string yaml;
  try {
    yaml = Recipe::load(recipe, sets).resolved_yaml();
  } catch (const std::runtime_error& e) {
    throw BadInput("the search's recipe: " + std::string(e.what()));
  }
  std::ostringstream text;
  text << "# trial " << trial->id << " (" << to_string(trial->status) << ", " << final_text(*trial)
       << ") of the search in " << redact_storage_url(url) << "\n# baton train " << out << " trains it again\n"
       << yaml << (yaml.empty() || yaml.back() != '\n' ? "\n" : "");
  write_file_atomically(out, text.str());
  std::printf("wrote %s: trial %lld (%s, %s) %s\n", out.c_str(), static_cast<long long>(trial->id),
              to_string(trial->status).c_str(), final_text(*trial).c_str(), trial->parameters.dump().c_str());
  return 0;
}

template <typename F>
void guarded(F f) {
  int code = 0;
  try {
    code = f();
  } catch (const BadInput& e) {
    std::fprintf(stderr, "baton: %s\n", e.what());
    code = kBadInput;
  }
  if (code != 0) throw CLI::RuntimeError(code);
}

}  // namespace

void add_search(CLI::App& app) {
  auto a = std::make_shared<ExperimentOptions>();  // the flags are its options, by the same names
  auto model_space_name = std::make_shared<std::string>();
  auto fuse = std::make_shared<int>(0);
  CLI::App* cmd = app.add_subcommand("search", "run a hyperparameter search: trials of a command or a recipe");
  cmd->add_option("space", a->space(), "search space (NNI's format, YAML or JSON); optional with --model-space");
  cmd->add_option("--model-space", *model_space_name,
                  "with --recipe: search the zoo's model space NAME (cnn_space, gpt_space): its choices are "
                  "model.arch.LABEL parameters, written to RUN_DIR/model_space.json (docs/nas.md)");
  cmd->add_option(
      "--command", a->command(),
      "trial command (sh -c): parameters in $BATON_TRIAL_PARAMETERS, reports 'baton: {\"final\": v}' lines");
  cmd->add_option("--recipe", a->recipe(), "each trial is `baton train RECIPE` with the parameters as --set overrides");
  cmd->add_option("--launcher", a->launcher(),
                  "with --recipe: what starts each trial's `baton train`, e.g. 'mpirun -np 4': a trial is a job of 4 "
                  "ranks, data-parallel or sharded as the recipe says");
  cmd->add_option("--engine", a->engine(),
                  experiment_engine_forms() +
                      "; default process. A table (CSV: the parameter columns, step, the "
                      "metrics) answers at no training cost, instead of --command/--recipe");
  cmd->add_option("--metric", a->metric(), "with --recipe: the evaluation metric to optimise (default eval/accuracy)");
  cmd->add_option("--objective", a->objectives(),
                  "METRIC:max or METRIC:min, repeatable: several objectives (a Pareto front), instead of --metric "
                  "and --direction; with --recipe any logged metric or params (the model's size); a --command trial "
                  "reports {\"final\": [v1, v2]} in this order");
  cmd->add_option("--constraint", a->constraints(),
                  "METRIC<=VALUE or METRIC>=VALUE, repeatable: a trial that breaks one is infeasible; a --command "
                  "trial reports {\"final\": v, \"constraints\": [m1]} in this order");
  cmd->add_option("--set", a->sets(), "with --recipe: a fixed override for every trial (repeatable)");
  cmd->add_option("--trials", a->trials(), "number of trials (default 10)");
  cmd->add_option("--parallel", a->parallel(), "trials at once (default 1, or one per slot of --devices)");
  cmd->add_option("--fuse", *fuse,
                  "with --recipe: up to K trials at once in this process over one data stream, each batch read "
                  "and prepared once for all of them (docs/nas.md)");
  cmd->add_option("--devices", a->devices(),
                  "devices to deal out to trials, e.g. 0,1,2,3: each trial sees only its own (CUDA_VISIBLE_DEVICES)")
      ->delimiter(',');
  cmd->add_option("--devices-per-trial", a->devices_per_trial(), "with --devices: devices each trial gets (default 1)");
  cmd->add_option("--threads-per-trial", a->threads_per_trial(),
                  "CPU threads each trial gets, on cores of its own (OMP_NUM_THREADS and the process's affinity)");
  cmd->add_option(
      "--strategy", a->strategy(),
      join_names(search_strategy_names()) +
          " (default tpe; pbt trains a --recipe's population, spos a --model-space's supernet; which take several "
          "objectives: docs/search.md)");
  cmd->add_option("--strategy-option", a->strategy_options(),
                  "KEY=VALUE: the strategy's options (repeatable, or K1=V1,K2=V2; docs/search.md), e.g. candidates=48");
  cmd->add_option_function<std::string>(
      "--direction",
      [a](const std::string& d) {
        if (d != "maximize" && d != "minimize") {
          throw CLI::ValidationError("--direction must be maximize or minimize, got '" + d + "'");
        }
        a->maximize(d == "maximize");
      },
      "maximize (default) or minimize");
  cmd->add_option("--seed", a->seed(), "strategy seed (default 0)");
  cmd->add_option("--storage", a->storage(), storage_forms() + "; default RUN_DIR/search.db");
  cmd->add_option("--run-dir", a->run_dir(), "where trials' logs and summary.json go (default runs/search)");
  cmd->add_flag("--resume", a->resume(),
                "continue the search in the storage: finished trials kept, unfinished run again");
  cmd->add_flag("--new-study", a->new_study(),
                "start a new study where one is (a SQLite storage and its trials' folders are moved aside first)");
  cmd->add_flag("--join", a->join(),
                "be one worker of a search shared through --storage (several processes or machines; implied under "
                "mpirun/srun): --trials counts the whole search");
  cmd->add_option("--heartbeat", a->heartbeat(),
                  "with --join: seconds between a worker's heartbeats; a trial whose worker is silent 10 times that "
                  "long goes back to the queue (default 2)");
  cmd->add_option("--trial-timeout", a->trial_timeout(), "seconds before a trial is stopped and counted failed");
  cmd->add_option("--retries", a->retries(), "run a failed trial again up to N times (default 0)");
  cmd->add_option("--asha", a->asha(),
                  "asynchronous successive halving: rungs at steps N, 3N, 9N...; a trial not in the best third of "
                  "the values at a rung is stopped (default 0: off)");
  cmd->add_option("--brackets", a->brackets(),
                  "with --asha: asynchronous Hyperband, K brackets; bracket b has its rungs at N*3^b, 3N*3^b... "
                  "(trials take brackets in turn; default 1: plain ASHA)");
  cmd->add_option("--median-stop", a->median_stop(),
                  "stop a trial whose best intermediate value is worse than the median of completed trials at the "
                  "same step, once N trials completed (default 0: off)");
  cmd->callback([a, cmd, model_space_name, fuse] {
    guarded([&] {
      if (!a->objectives().empty() && (cmd->count("--direction") > 0 || cmd->count("--metric") > 0))
        throw BadInput("give either --objective METRIC:max|min (repeatable) or --metric/--direction, not both");
      a->trainer(self_exe());
      return run_search({*a, *model_space_name, *fuse});
    });
  });

  auto storage = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto id = std::make_shared<int64_t>(0);
  CLI::App* trials = app.add_subcommand("trials", "list or show the trials of a search, or its Pareto front");
  trials->require_subcommand(1);
  CLI::App* ls = trials->add_subcommand("ls", "list the trials in a storage");
  ls->add_option("--storage", *storage, "the search's storage (sqlite:///PATH.db or PATH.db)")->required();
  ls->add_flag("--json", *json,
               "one JSON array: [{id, status, parameters, final, intermediate, exploits, started_at, ended_at}]");
  ls->callback([storage, json] { guarded([&] { return run_trials_ls(*storage, *json); }); });
  CLI::App* pareto = trials->add_subcommand("pareto", "the Pareto front of a search with several objectives");
  pareto->add_option("--storage", *storage, "the search's storage (sqlite:///PATH.db or PATH.db)")->required();
  pareto->add_flag("--json", *json, "one JSON object: {objectives, pareto: [{id, status, parameters, values...}]}");
  pareto->callback([storage, json] { guarded([&] { return run_trials_pareto(*storage, *json); }); });
  CLI::App* show = trials->add_subcommand("show", "one trial in full");
  show->add_option("id", *id, "trial id")->required();
  show->add_option("--storage", *storage, "the search's storage")->required();
  show->callback([storage, id] { guarded([&] { return run_trials_show(*storage, *id); }); });

  auto trial = std::make_shared<std::optional<int64_t>>();
  auto out = std::make_shared<std::string>();
  CLI::App* nas = app.add_subcommand("nas", "architecture search: export a searched architecture");
  nas->require_subcommand(1);
  CLI::App* exp = nas->add_subcommand("export", "write a trial of a recipe's search (its architecture) as a recipe");
  exp->add_option("--storage", *storage, "the search's storage (sqlite:///PATH.db or PATH.db)")->required();
  exp->add_option("--trial", *trial, "trial id (default: the search's best)");
  exp->add_option("--out", *out, "the recipe to write (YAML)")->required();
  exp->callback([storage, trial, out] { guarded([&] { return run_nas_export(*storage, *trial, *out); }); });
}

}  // namespace baton::cli
