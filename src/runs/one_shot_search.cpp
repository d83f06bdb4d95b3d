// baton search --strategy spos: single-path one-shot search (SPOS, Guo et al. 2020) of a model
// space. One supernet holding every candidate's weights trains one path per batch; architectures
// are then evaluated with the weights they inherit (BatchNorm statistics recomputed on a few
// batches), suggested by regularized evolution, each a trial in the search's storage; the best is
// trained again from scratch with the recipe. Writes RUN_DIR/supernet.ckpt (a --resume reuses it)
// and RUN_DIR/spos.json (the phases' times and results).
#include "baton/runs/one_shot_search.h"

#include <time.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/core/time.h"
#include "baton/exec/experiment.h"
#include "baton/exec/strategy.h"
#include "baton/io/file.h"
#include "baton/io/write.h"
#include "baton/runs/train_recipe.h"
#include "baton/train/one_shot.h"
#include "baton/train/recipe.h"

namespace baton {
namespace {

const std::string kArch = "model.arch.";

// This process's CPU time and the wall clock, in seconds.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Phase {  // what one phase took
  double cpu = cpu_seconds(), wall = wall_seconds();
  nlohmann::json done() const {
    return {{"cpu_seconds", cpu_seconds() - cpu}, {"wall_seconds", wall_seconds() - wall}};
  }
};

// --strategy-option KEY=VALUE of spos, checked, with their defaults.
struct SposSettings {
  std::string supernet_duration;  // "": the recipe's max_duration
  std::string sampling = "uniform";
  int64_t recalibrate_batches = 10;
  bool retrain = true;
  nlohmann::json evolution = {{"population", 20}, {"sample_size", 5}};
};

SposSettings read_settings(const std::vector<std::string>& options) {
  nlohmann::json given = nlohmann::json::object();
  for (const auto& kv : options) add_strategy_setting(given, kv);
  SposSettings s;
  for (const auto& [key, value] : given.items()) {
    const std::string bad = "--strategy-option " + key + "=" + value.dump() + ": ";
    if (key == "supernet_duration") {
      const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
      try {
        (void)Time::parse(text);
      } catch (const std::exception&) {
        throw std::invalid_argument(bad + "expected a duration (2000ba, 3ep)");
      }
      s.supernet_duration = text;
    } else if (key == "sampling") {
      if (value != "uniform" && value != "fair") throw std::invalid_argument(bad + "expected uniform or fair");
      s.sampling = value.get<std::string>();
    } else if (key == "recalibrate_batches") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > 100000)
        throw std::invalid_argument(bad + "expected batches from 0 to 100000");
      s.recalibrate_batches = value.get<int64_t>();
    } else if (key == "retrain") {
      if (!value.is_boolean()) throw std::invalid_argument(bad + "expected true or false");
      s.retrain = value.get<bool>();
    } else if (key == "population" || key == "sample_size" || key == "mutation_prob") {
      s.evolution[key] = value;  // regularized evolution checks them
    } else {
      throw std::invalid_argument(bad +
                                  "spos's options are supernet_duration, sampling, recalibrate_batches, retrain, "
                                  "population, sample_size and mutation_prob (docs/nas.md)");
    }
  }
  return s;
}

// The supernet's recipe overrides: the search's, the space's choices as the values a path may take,
// the single_path algorithm, no evaluation while it trains.
std::vector<std::string> supernet_sets(const ExperimentOptions& o, const SposSettings& s) {
  std::vector<std::string> sets = o.sets();
  sets.push_back("model.one_shot=true");
  for (const auto& [key, choice] : o.space_definition().items()) {
    if (key.rfind(kArch, 0) != 0) {
      throw std::invalid_argument("--strategy spos searches the architecture alone: " + key +
                                  " is not a model.arch choice (fix it with --set, or use a multi-trial strategy)");
    }
    sets.push_back(key + "=" + choice["_value"].dump());
  }
  sets.push_back("algorithms.single_path.sampling=" + s.sampling);
  sets.push_back("algorithms.single_path.seed=" + std::to_string(o.seed()));
  sets.push_back("eval_interval=0ep");
  sets.push_back("progress_bar=false");
  sets.push_back("console_log_interval=0ep");  // the search's status line says how it goes
  if (!s.supernet_duration.empty()) sets.push_back("max_duration=" + s.supernet_duration);
  return sets;
}

// The supernet's trainer: the recipe, the space and the settings checked, nothing written.
std::unique_ptr<Trainer> supernet_trainer(const ExperimentOptions& o, const SposSettings& s) {
  TrainingRun run = build_run(Recipe::load(o.recipe(), supernet_sets(o, s)));
  return std::make_unique<Trainer>(run.options);
}

// What the run before said of its supernet (RUN_DIR/spos.json), for a resumed search's report:
// null when there is no such report, or it cannot be read.
nlohmann::json earlier_supernet(const std::filesystem::path& run_dir) {
  try {
    const nlohmann::json earlier = nlohmann::json::parse(read_file((run_dir / "spos.json").string()));
    if (earlier.is_object() && earlier.contains("supernet") && earlier["supernet"].is_object())
      return earlier["supernet"];
  } catch (const std::exception&) {  // no report, or a bad one: the figures are unknown
  }
  return nullptr;
}

// The supernet, trained (or read back from RUN_DIR/supernet.ckpt on --resume: the report keeps
// what the run that trained it measured).
void train_supernet(Trainer* trainer, const ExperimentOptions& o, const SposSettings& s, nlohmann::json& report) {
  const auto path = o.run_dir() / "supernet.ckpt";
  const Phase phase;
  std::filesystem::create_directories(o.run_dir());
  write_file_atomically((o.run_dir() / "model_space.json").string(), o.space_definition().dump(2) + "\n");
  if (o.resume() && std::filesystem::is_regular_file(path)) {
    trainer->load_checkpoint(path.string(), true, true);
    std::printf("spos: supernet read back from %s\n", path.c_str());
    report["supernet"] = earlier_supernet(o.run_dir());
    if (!report["supernet"].is_object()) report["supernet"] = nlohmann::json::object();
    report["supernet"]["read_back_from"] = path.string();
    return;
  }
  std::printf("spos: training the supernet (%s sampling) for %s\n", s.sampling.c_str(),
              trainer->options().max_duration().to_string().c_str());
  std::fflush(stdout);
  trainer->fit();
  trainer->save_checkpoint(path.string(), true);
  report["supernet"] = phase.done();
  report["supernet"]["batches"] = trainer->state().timestamp.batch();
  report["supernet"]["checkpoint"] = path.string();
  std::printf("spos: supernet trained %lld batches in %.1f s (cpu %.1f s): %s\n",
              static_cast<long long>(trainer->state().timestamp.batch()),
              report["supernet"]["wall_seconds"].get<double>(), report["supernet"]["cpu_seconds"].get<double>(),
              path.c_str());
}

// A trial: its architecture on the supernet, with inherited weights.
TrialFunction inherited(Trainer& trainer, const std::string& metric, int64_t recalibrate_batches) {
  return [&trainer, metric, recalibrate_batches](TrialContext& ctx) {
    nlohmann::json path = nlohmann::json::object();
    for (const auto& [key, value] : ctx.parameters().items()) path[key.substr(kArch.size())] = value;
    const auto metrics = evaluate_path(trainer, path, recalibrate_batches);
    const auto it = metrics.find(metric);
    if (it == metrics.end()) {
      std::string known;
      for (const auto& [name, v] : metrics) known += (known.empty() ? "" : ", ") + name;
      throw std::runtime_error("the supernet's evaluation has no metric " + metric + " (it has " + known + ")");
    }
    ctx.report_final(it->second);
  };
}

// The best architecture trained again from scratch with the search's recipe: its metric.
double retrain(const ExperimentOptions& o, const Trial& best, nlohmann::json& report) {
  const Phase phase;
  std::vector<std::string> sets = o.sets();
  flatten_parameters(best.parameters, "", sets);
  sets.push_back("progress_bar=false");
  TrainingRun run = build_run(Recipe::load(o.recipe(), sets));
  Trainer trainer(run.options);
  std::printf("spos: retraining trial %lld from scratch: %s\n", static_cast<long long>(best.id),
              best.parameters.dump().c_str());
  std::fflush(stdout);
  trainer.fit();
  std::optional<double> value;
  for (const auto& [label, metrics] : trainer.eval()) {
    for (const auto& [name, v] : metrics) {
      std::string key = label;
      key += "/";
      key += name;
      if (key == o.metric()) value = v;
    }
  }
  if (!value) throw std::runtime_error("the retrained model's evaluation has no metric " + o.metric());
  report["retrain"] = phase.done();
  report["retrain"]["trial"] = best.id;
  report["retrain"][o.metric()] = *value;
  return *value;
}

}  // namespace

int one_shot_search(ExperimentOptions o,
                    const std::function<int(Experiment&, const ExperimentOptions&, ExperimentResult&)>& run) {
  if (!o.engine().empty() && o.engine() != "process")
    throw std::invalid_argument("--strategy spos evaluates on its supernet: leave out --engine");
  if (o.objectives().size() > 1) throw std::invalid_argument("--strategy spos takes one objective (--metric)");
  if (o.parallel() > 1)
    throw std::invalid_argument("--strategy spos evaluates one architecture at a time: no --parallel");
  const SposSettings s = read_settings(o.strategy_options());
  nlohmann::json report = {{"metric", o.metric()}, {"sampling", s.sampling}};
  const Phase total;
  auto trainer = supernet_trainer(o, s);
  o.strategy("regularized_evolution");
  o.strategy_options({});
  for (const auto& [key, value] : s.evolution.items()) o.strategy_options().push_back(key + "=" + value.dump());
  o.engine("spos");
  o.parallel(1);
  o.trial_function(inherited(*trainer, o.metric(), s.recalibrate_batches));
  Experiment experiment(o);  // its options checked before the supernet trains
  train_supernet(trainer.get(), o, s, report);
  const Phase search;
  ExperimentResult result;
  const int code = run(experiment, o, result);
  report["search"] = search.done();
  report["search"]["trials"] = o.trials();
  const auto& best = result.best;
  if (code != 0 || !best) return code;
  report["search"]["best"] = {
      {"trial", best->id}, {"parameters", best->parameters}, {"inherited", *best->metrics.final}};
  if (s.retrain) {
    const double value = retrain(o, *best, report);
    std::printf("spos: trial %lld retrained: %s %.4f (with inherited weights %.4f)\n", static_cast<long long>(best->id),
                o.metric().c_str(), value, *best->metrics.final);
  }
  report["total"] = total.done();
  write_file_atomically((o.run_dir() / "spos.json").string(), report.dump(2) + "\n");
  std::printf("spos: %.1f s of CPU in all (supernet, %lld evaluations%s): %s\n",
              report["total"]["cpu_seconds"].get<double>(), static_cast<long long>(o.trials()),
              s.retrain ? ", retrain" : "", (o.run_dir() / "spos.json").c_str());
  return 0;
}

}  // namespace baton
