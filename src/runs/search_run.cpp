// `baton search` as a library call (include/baton/runs/search_run.h): a recipe's or a command's
// search, a model space's, fused or one-shot; the search's MLflow run; SIGTERM and SIGINT stop it.
#include "baton/runs/search_run.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/device.h"
#include "baton/core/options.h"
#include "baton/core/registry.h"
#include "baton/exec/experiment.h"
#include "baton/exec/strategy.h"
#include "baton/io/url.h"
#include "baton/io/write.h"
#include "baton/loggers/mlflow_logger.h"
#include "baton/loggers/registry.h"
#include "baton/runs/fused_trials.h"
#include "baton/runs/model_space_search.h"
#include "baton/runs/one_shot_search.h"
#include "baton/runs/train_recipe.h"
#include "baton/train/recipe.h"
#include "baton/train/recipe_file.h"

namespace baton {
namespace {

// The one-shot searches by strategy name: each runs the whole search from the options (a model
// space's already in them) and returns its exit code; `run` runs an Experiment it makes.
using RunExperiment = std::function<int(Experiment&, const ExperimentOptions&, ExperimentResult&)>;
using OneShotSearches = Registry<int, const ExperimentOptions&, const RunExperiment&>;

const OneShotSearches& one_shot_registry() {
  static const OneShotSearches table(
      "one-shot search", OneShotSearches::Order::kRegistration,
      {{"spos", [](const ExperimentOptions& o, const RunExperiment& run) { return one_shot_search(o, run); }}});
  return table;
}

// SIGTERM / SIGINT: the first stops the search (its running trials' process groups are ended and
// stored as interrupted, for --resume to run again); a second one exits at once.
std::atomic<int> g_search_signal{0};
std::atomic<Experiment*> g_experiment{nullptr};

extern "C" void on_search_signal(int sig) {
  if (g_search_signal.exchange(sig) != 0) _exit(128 + sig);
  stop_transfers();  // fused trials read their shards in this process: a stalled server never holds it
  if (Experiment* e = g_experiment.load()) e->stop(sig);
}

// A search whose recipe logs to MLflow has a run of its own (RUN_DIR/mlflow.json; --resume goes
// on with it) with the search's settings as params; each trial's run is its child
// (BATON_MLFLOW_PARENT_RUN_ID in the trials' environment). nullptr when the recipe has no mlflow.
std::shared_ptr<MlflowLogger> search_mlflow_run(const ExperimentOptions& o) {
  if (o.recipe().empty()) return nullptr;
  std::optional<nlohmann::json> options;
  try {
    options = recipe_logger_options(Recipe::load(o.recipe(), o.sets()), "mlflow");
  } catch (const std::exception&) {  // a recipe that cannot be read: its trials say why
    return nullptr;
  }
  if (!options) return nullptr;
  RunLoggerContext context;
  context.folder = o.run_dir().string();
  context.resume = o.resume() || o.join();
  context.run_name = "search-" + std::filesystem::absolute(o.run_dir()).filename().string();
  context.source = std::filesystem::absolute(o.recipe()).string();
  auto logger = std::dynamic_pointer_cast<MlflowLogger>(make_run_logger("mlflow", context, *options));
  logger->log_hyperparameters({{"search",
                                {{"space", o.space()},
                                 {"strategy", o.strategy()},
                                 {"strategy_options", o.strategy_options()},
                                 {"metric", o.metric()},
                                 {"direction", o.maximize() ? "maximize" : "minimize"},
                                 {"objectives", o.objectives()},
                                 {"constraints", o.constraints()},
                                 {"trials", o.trials()},
                                 {"parallel", o.parallel()},
                                 {"seed", o.seed()}}}});
  logger->log_tag("baton.search", std::filesystem::absolute(o.run_dir()).string());
  logger->start();
  const std::string id = logger->wait_for_run(10);
  if (id.empty()) {
    std::fprintf(stderr,
                 "baton: mlflow: the search's run could not be made in 10 s; its trials are runs of their "
                 "own (the search's run is made when the server answers)\n");
  } else {
    ::setenv("BATON_MLFLOW_PARENT_RUN_ID", id.c_str(), 1);
  }
  return logger;
}

// Runs `experiment` (the search `options` describe): a signal stops it; a recipe that logs to
// MLflow gets the search's own run. Its exit code; `result` what it found.
int run_experiment(Experiment& experiment, const ExperimentOptions& options, ExperimentResult& result) {
  const auto mlflow = search_mlflow_run(options);
  g_experiment.store(&experiment);
  on_stop_signals(on_search_signal);
  try {
    result = experiment.run();
  } catch (const ExperimentError&) {  // found while it ran: a metric the trials never log
    g_experiment.store(nullptr);
    if (mlflow) {
      mlflow->set_end_status("FAILED");
      mlflow->post_close();
    }
    throw;
  }
  g_experiment.store(nullptr);
  if (mlflow) {
    if (result.best && result.best->metrics.final) {
      mlflow->log_metrics({{"best/" + options.metric(), *result.best->metrics.final},
                           {"best/trial", static_cast<double>(result.best->id)}},
                          0);
    }
    mlflow->set_end_status(result.stopped_by != 0 ? "KILLED" : result.best ? "FINISHED" : "FAILED");
    mlflow->post_close();
  }
  if (result.stopped_by != 0) return 128 + result.stopped_by;
  return result.best ? 0 : 1;  // no trial finished
}

// The flags become an Experiment (src/exec/experiment.cpp: what the search does); a signal stops it.
// --devices of a recipe's search: each trial trains on its devices, so they must be this machine's
// CUDA devices (else every trial would train on the CPU, silently).
void check_recipe_devices(const ExperimentOptions& options) {
  if (options.recipe().empty() || options.devices().empty()) return;
  const int count = cuda_device_count();
  for (const std::string& d : options.devices()) {
    const bool index = !d.empty() && d.find_first_not_of("0123456789") == std::string::npos && d.size() < 5;
    if (count == 0 || (index && std::stoi(d) >= count)) {
      throw std::invalid_argument("--devices " + join_names(options.devices(), ",") + ": this machine has " +
                                  std::to_string(count) +
                                  " CUDA device(s), so the trials would train on the CPU: name devices "
                                  "it has (nvidia-smi -L), or leave --devices out");
    }
  }
}

}  // namespace

int run_search(SearchRequest request) {
  ExperimentOptions& options = request.options;
  const std::string& model_space_name = request.model_space;
  const int fuse = request.fuse;
  check_recipe_devices(options);
  if (!model_space_name.empty()) {
    try {
      use_model_space(model_space_name, options);
    } catch (const std::runtime_error& e) {  // the recipe, its data: bad input too
      throw std::invalid_argument(e.what());
    }
  } else if (options.space().empty()) {
    throw std::invalid_argument("give a search space (a file), --model-space NAME, or both");
  }
  const std::vector<std::string> strategies = search_strategy_names();
  if (std::find(strategies.begin(), strategies.end(), options.strategy()) == strategies.end())
    throw std::invalid_argument(unknown_name("strategy", options.strategy(), strategies));
  if (is_one_shot_search(options.strategy())) {
    if (model_space_name.empty())
      throw std::invalid_argument("--strategy " + options.strategy() +
                                  " trains a model space's supernet: add --model-space NAME (docs/nas.md)");
    return one_shot_registry().make(
        options.strategy(), options,
        [](Experiment& e, const ExperimentOptions& o, ExperimentResult& r) { return run_experiment(e, o, r); });
  }
  std::shared_ptr<FusedData> fused;
  if (fuse != 0) fused = use_fused_trials(options, fuse);
  Experiment experiment(options);   // its options checked (ExperimentError, an invalid_argument)
  if (!model_space_name.empty()) {  // for the user: the space the search samples
    write_file_atomically((options.run_dir() / "model_space.json").string(), options.space_definition().dump(2) + "\n");
  }
  ExperimentResult result;
  const int code = run_experiment(experiment, options, result);
  if (fused) write_fused_report(*fused, fuse, options.run_dir());
  return code;
}

std::vector<std::string> search_strategy_names() {
  std::vector<std::string> names = strategy_names();
  for (const std::string& name : one_shot_registry().names()) names.push_back(name);
  return names;
}

bool is_one_shot_search(const std::string& strategy) { return one_shot_registry().contains(strategy); }

}  // namespace baton
