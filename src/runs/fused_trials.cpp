// Fused trials (include/baton/runs/fused_trials.h): each trial trains its recipe with train_recipe
// on a thread of its own, its protocol lines going to its context and its stdout.log.
#include "baton/runs/fused_trials.h"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/exec/experiment.h"
#include "baton/exec/pareto.h"
#include "baton/exec/space.h"
#include "baton/io/write.h"
#include "baton/runs/search_run.h"
#include "baton/runs/train_recipe.h"
#include "baton/train/fused.h"

namespace baton {
namespace {

// A trial's protocol line, to the trial's context (and its stdout.log, as a trial process's).
void report(TrialContext& context, const nlohmann::json& line, std::FILE* log) {
  print_protocol_line(log, line);
  if (line.contains("intermediate")) {
    context.report_intermediate(line["intermediate"].get<double>(), line["step"].get<int64_t>());
    return;
  }
  const nlohmann::json& final = line["final"];
  std::vector<double> values = final.is_array() ? final.get<std::vector<double>>() : std::vector<double>{final};
  context.report_values(values, line.value("constraints", std::vector<double>{}));
}

void run_fused_trial(TrialContext& context, const ExperimentOptions& o, FusedData& fused, int threads) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::absolute(o.run_dir() / "trials" / std::to_string(context.trial_id()));
  fs::create_directories(dir);
  const std::string log_path = (dir / "stdout.log").string();
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(std::fopen(log_path.c_str(), "a"), &std::fclose);
  if (!log) throw std::runtime_error(log_path + ": cannot be written");
  RunLink link;
  link.out = log.get();
  link.parameters = context.parameters();
  std::tie(link.metrics, link.constraints) = reported_metrics(search_objectives(o));
  link.trial_id = std::to_string(context.trial_id());
  if (const char* parent = std::getenv("BATON_MLFLOW_PARENT_RUN_ID")) link.mlflow_parent = parent;
  link.report = [&](const nlohmann::json& line) { report(context, line, link.out); };
  link.stop_signal = [&] { return context.should_stop() ? SIGTERM : 0; };
  link.fused = &fused;
  link.own_signals = false;
  TrainRequest args;
  args.recipe = o.recipe();
  // Its threads, and no console lines (the search's status line says how the trials go); the
  // search's --set may say otherwise.
  args.sets = {"num_threads=" + std::to_string(threads), "console_log_interval=0ep"};
  args.sets.insert(args.sets.end(), o.sets().begin(), o.sets().end());
  args.sets.push_back("progress_bar=false");
  args.run_dir = dir.string();
  args.autoresume = true;  // a retried or resumed trial goes on from its checkpoints
  const int code = train_recipe(args, link);
  if (code != 0 && !context.should_stop()) {
    throw std::runtime_error("the trial ended with exit code " + std::to_string(code) + " (" + log_path + ")");
  }
}

// Refuses, saying why, what cannot share one data stream or run in this process.
void check_fusable(const ExperimentOptions& o, int k) {
  auto refuse = [&](const std::string& why) {
    throw std::invalid_argument("--fuse " + std::to_string(k) + ": " + why);
  };
  if (k < 1 || k > 64) refuse("expected 1 to 64 trials at once");
  if (o.recipe().empty()) refuse("fuses the trials of a recipe: add --recipe (a --command's trials are processes)");
  if (!o.engine().empty() && o.engine() != "process") refuse("the trials train here, not in --engine " + o.engine());
  if (o.parallel() > 0) refuse("K trials run at once: no --parallel");
  if (!o.devices().empty())
    refuse("the fused trials share the recipe's device (each on a CUDA stream of its own on a GPU): no --devices");
  if (o.join()) refuse("fused trials run in this process: no --join");
  if (o.trial_timeout() > 0) refuse("a fused trial is a thread, not a process to end: no --trial-timeout");
  if (o.strategy() == "pbt" || is_one_shot_search(o.strategy())) refuse("--strategy " + o.strategy() + " is not fused");
  nlohmann::json space = o.space_definition();
  if (space.is_null()) {
    try {
      space = SearchSpace::read_file(o.space());
    } catch (const std::exception&) {  // the search reads it again, and says what is wrong with it
      return;
    }
  }
  for (const auto& [key, value] : space.items()) {
    if (key.rfind("data.", 0) == 0 || key == "seed" || key == "model.name") {
      refuse("the fused trials share one data set, batch size and order, and one model space, but the space varies " +
             key + " (fix it with --set, or search without --fuse)");
    }
  }
}

}  // namespace

std::shared_ptr<FusedData> use_fused_trials(ExperimentOptions& o, int k) {
  check_fusable(o, k);
  const int cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  const int threads = o.threads_per_trial() > 0 ? o.threads_per_trial() : std::max(1, cores / k);
  auto fused = std::make_shared<FusedData>();
  o.parallel(k);
  o.engine("fused");
  o.trial_function([o, fused, threads](TrialContext& context) { run_fused_trial(context, o, *fused, threads); });
  return fused;
}

void write_fused_report(const FusedData& fused, int k, const std::filesystem::path& run_dir) {
  timespec cpu{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  const SharedBatches::Stats s = fused.stats();
  const SharedBatches::Stats e = fused.eval_stats();
  const int64_t eval_made = e.made + e.made_alone;
  const nlohmann::json report = {
      {"fuse", k},
      {"batches_made", s.made},
      {"batches_taken", s.taken},
      {"data_seconds", s.make_seconds},
      {"process_cpu_seconds", static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9},
      {"most_held", s.most_held},
      {"most_held_bytes", s.most_held_bytes},
      {"waits_for_the_slowest", s.waits},
      {"eval_batches_made", eval_made},
      {"eval_batches_made_alone", e.made_alone},
      {"eval_batches_taken", e.taken},
      {"eval_data_seconds", e.make_seconds}};
  write_file_atomically((run_dir / "fused.json").string(), report.dump(2) + "\n");
  std::printf(
      "fused: %lld batches made for %lld taken, %.1f s of making them; evaluations: %lld made for %lld taken, %.1f s "
      "(RUN_DIR/fused.json)\n",
      static_cast<long long>(s.made), static_cast<long long>(s.taken), s.make_seconds,
      static_cast<long long>(eval_made), static_cast<long long>(e.taken), e.make_seconds);
}

}  // namespace baton
