// `baton train` as a library call (include/baton/runs/train_recipe.h): the recipe built, its run
// folder claimed and prepared (train/run_folder.h), the run's callbacks and loggers added, the
// trainer made and fitted, model.pt and summary.json written, a search trial's metrics reported.
#include "baton/runs/train_recipe.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

#include <torch/torch.h>

#include "baton/callbacks/trace_profiler.h"
#include "baton/core/device.h"
#include "baton/core/options.h"
#include "baton/exec/experiment.h"
#include "baton/exec/space.h"
#include "baton/io/run_dir.h"
#include "baton/io/text.h"
#include "baton/io/url.h"
#include "baton/loggers/mlflow_logger.h"
#include "baton/loggers/registry.h"
#include "baton/loggers/table_files.h"
#include "baton/loggers/tensorboard_logger.h"
#include "baton/models/hf.h"
#include "baton/models/summary.h"
#include "baton/train/checkpoint.h"
#include "baton/train/fused.h"
#include "baton/train/ranks.h"
#include "baton/train/recipe.h"
#include "baton/train/run_folder.h"
#include "baton/version.h"

namespace baton {
namespace {

// SIGTERM / SIGINT: the first asks the run to stop after the current batch (the checkpoint saver
// writes a checkpoint at fit end); a second one exits at once. Checkpoints are written to a
// temporary name and renamed, so exiting mid-write leaves the last good one intact.
std::atomic<int> g_signal{0};

extern "C" void on_stop_signal(int sig) {
  if (g_signal.exchange(sig) != 0) _exit(128 + sig);
  stop_transfers();  // a shard server that stalls never keeps the run from stopping
}

// Stops the run after the batch once it is asked to (a signal, the search).
class LinkStopper : public Callback {
 public:
  explicit LinkStopper(std::function<int()> stop_signal) : stop_signal_(std::move(stop_signal)) {}
  void batch_end(State& state, Logger&) override {
    if (stop_signal_() != 0) state.stop_training();
  }

 private:
  std::function<int()> stop_signal_;
};

// Population-based training's interval (BATON_TRIAL_UNTIL, e.g. 1000ba): the run stops there, with
// an evaluation and a checkpoint, and its final line says it paused. A run resumed at that point
// stops at once.
class PauseAt : public Callback {
 public:
  explicit PauseAt(Time until) : until_(until) {}
  void fit_start(State& state, Logger&) override { check(state); }
  void batch_end(State& state, Logger&) override { check(state); }

 private:
  void check(State& state) const {
    if (state.timestamp.get(until_.unit()) >= until_) state.stop_training();
  }
  Time until_;
};

// BATON_TRIAL_UNTIL, when a search set it.
std::optional<Time> trial_until() {
  const char* text = std::getenv("BATON_TRIAL_UNTIL");
  if (text == nullptr || *text == '\0') return std::nullopt;
  try {
    return Time::parse(text);
  } catch (const std::invalid_argument& e) {
    throw RecipeError(std::string("BATON_TRIAL_UNTIL: ") + e.what());
  }
}

namespace fs = std::filesystem;

// What `baton export` needs to build the model again without the data.
nlohmann::json model_meta(const TrainingRun& run) {
  nlohmann::json model = {{"name", run.model_name},
                          {"input_shape", run.model_spec.input_shape()},
                          {"num_classes", run.model_spec.num_classes()},
                          {"hidden", run.model_spec.hidden()},
                          {"layers", run.model_spec.layers()},
                          {"width", run.model_spec.width()},
                          {"heads", run.model_spec.heads()},
                          {"dropout", run.model_spec.dropout()},
                          {"mlp_ratio", run.model_spec.mlp_ratio()}};
  if (!run.model_spec.arch().is_null()) model["arch"] = run.model_spec.arch();  // a model space's architecture
  if (!run.model_path.empty()) model["path"] = std::filesystem::absolute(run.model_path).string();
  if (const HfConfig* hf = hf_config_of(*run.options.model())) model["hf_config"] = hf->json;  // export rebuilds it
  return model;
}

// A search trial's parameters, applied after the command line's --set (flatten_parameters).
std::vector<std::string> with_trial_parameters(std::vector<std::string> sets, const nlohmann::json& parameters) {
  if (!parameters.is_null()) flatten_parameters(parameters, "", sets);
  return sets;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

// Prints the trial protocol's lines for the search's metrics (BATON_TRIAL_METRIC, e.g.
// eval/accuracy, or several objectives comma-separated; BATON_TRIAL_CONSTRAINTS): the first one's
// intermediate value at each evaluation, with the batch as its step; at the end their final values.
class TrialReporter : public Callback {
 public:
  explicit TrialReporter(const RunLink& link) : link_(link) {}
  const std::vector<std::string>& metrics() const { return link_.metrics; }
  const std::vector<std::string>& constraints() const { return link_.constraints; }
  void eval_after_all(State& state, Logger&) override {
    if (auto v = state.eval_metric(link_.metrics.at(0)))
      link_.report({{"intermediate", *v}, {"step", state.timestamp.batch()}});
  }

 private:
  const RunLink& link_;
};

// The run's callbacks: the recipe's (a profiler writing into the run, not the working folder), the
// signal stopper, a search trial's reporter (returned), --profile's trace profiler.
std::shared_ptr<TrialReporter> add_run_callbacks(TrainingRun& run, const TrainRequest& args, const fs::path& dir,
                                                 bool writes, const RunLink& link) {
  auto callbacks = run.options.callbacks();
  for (const auto& callback : callbacks) {
    auto profiler = std::dynamic_pointer_cast<TraceProfiler>(callback);
    if (profiler && fs::path(profiler->folder()).is_relative())
      profiler->set_folder((dir / profiler->folder()).string());
  }
  callbacks.push_back(std::make_shared<LinkStopper>(link.stop_signal));
  if (link.until && writes) callbacks.push_back(std::make_shared<PauseAt>(*link.until));
  std::shared_ptr<TrialReporter> reporter;
  if (!link.metrics.empty() && writes) {
    reporter = std::make_shared<TrialReporter>(link);
    callbacks.push_back(reporter);
  }
  if (args.profile && writes) {
    // Batches 2..6 of the run (the first is warm-up), one file in RUN_DIR/traces.
    callbacks.push_back(std::make_shared<TraceProfiler>(TraceProfilerOptions().folder(RunDir(dir).traces().string())));
  }
  run.options.callbacks(callbacks);
  return reporter;
}

// The recipe's loggers, writing into the run folder (a resumed run continues the metrics of the one
// it resumes, each batch once) or sending the run (MLflow: a search's trial is a child run of the
// search's, named after the trial).
void add_run_loggers(TrainingRun& run, const TrainRequest& args, const fs::path& dir, bool writes,
                     const RunLink& link) {
  auto loggers = run.options.loggers();
  RunLoggerContext context;
  context.folder = dir.string();
  context.resume = run.options.autoresume();
  context.run_name = run.options.run_name();
  context.source = fs::absolute(args.recipe).string();
  context.parent_run_id = link.mlflow_parent;
  if (!link.trial_id.empty()) context.run_name += "-trial-" + link.trial_id;
  for (const auto& [name, options] : writes ? run.loggers : decltype(run.loggers){}) {
    loggers.push_back(make_run_logger(name, context, options));
  }
  if (writes) loggers.push_back(std::make_shared<TableFiles>(dir));  // eval/confusion_matrix.csv, ...
  run.options.loggers(loggers);
}

// What the trainer says before it trains: data parallelism, the checkpoint it resumes from.
void print_start(Trainer& trainer, const TrainingRun& run, bool writes, std::FILE* out) {
  if (trainer.world_size() > 1 && trainer.rank() == 0) {
    std::fprintf(out, "data parallel: %d ranks x %d threads, global batch %lld (each rank about %lld)\n",
                 trainer.world_size(), at::get_num_threads(),
                 static_cast<long long>(run.options.train_dataloader()->batch_size()),
                 static_cast<long long>(run.options.train_dataloader()->batch_size() / trainer.world_size()));
    std::fflush(out);
  }
  if (!trainer.loaded_from().empty() && writes) {
    std::fprintf(out, "resuming from %s at %s\n", trainer.loaded_from().c_str(),
                 trainer.state().timestamp.to_string().c_str());
  }
}

// A search trial's final line: its objectives' values (one, or a list) and its constraints'; a
// metric never logged is named (the search stops on it). `params` is the model's parameter count; paused_at
// (0 or more): the batch where the run stopped at population-based training's interval end.
// Returns the error ("" when it reported).
std::string report_final(const TrialReporter& reporter, const RunLink& link, nlohmann::json metrics,
                         const TrainingRun& run, int64_t paused_at) {
  int64_t params = 0;
  for (const auto& p : std::dynamic_pointer_cast<torch::nn::Module>(run.options.model())->parameters())
    params += p.numel();
  if (!metrics.contains("params")) metrics["params"] = params;
  std::string error;
  auto values = [&](const std::vector<std::string>& names, nlohmann::json& out) {
    for (const auto& name : names) {
      if (!metrics.contains(name)) {
        std::vector<std::string> known;
        for (const auto& [key, value] : metrics.items()) known.push_back(key);
        error = std::string(kUnknownTrialMetric) + "'" + name + "' (the run logged: " + join_names(known) + ")";
        return false;
      }
      out.push_back(metrics[name]);
    }
    return true;
  };
  nlohmann::json line = {{"final", nlohmann::json::array()}};
  if (!values(reporter.metrics(), line["final"])) return error;
  if (line["final"].size() == 1) line["final"] = line["final"][0];
  if (!reporter.constraints().empty() && !values(reporter.constraints(), line["constraints"])) return error;
  if (paused_at >= 0) {  // stopped at BATON_TRIAL_UNTIL: population-based training's interval end
    line["paused"] = true;
    line["step"] = paused_at;
  }
  link.report(line);
  return "";
}

// After training (rank 0): model.pt, summary.json, the closing lines, a search trial's final value;
// returns the exit code.
int finish_run(Trainer& trainer, const TrainingRun& run, const RunFolder& folder, const TrialReporter* reporter,
               const RunLink& link) {
  const RunSummary& s = trainer.summary();
  const nlohmann::json metrics = folder.finish(trainer);
  std::fprintf(link.out, "done: %lld steps in %.1f s (%.0f samples/s, evaluation %.1f s)",
               static_cast<long long>(s.steps), s.train_s, s.samples_per_s(), s.eval_s);
  if (metrics.contains("eval/accuracy"))
    std::fprintf(link.out, ", test accuracy %.4f", metrics["eval/accuracy"].get<double>());
  std::fprintf(link.out, "\nsummary: %s\n", folder.files().summary().string().c_str());
  // Stopped by a signal (the search ended it, a timeout): not finished, nothing to report.
  // Stopped at BATON_TRIAL_UNTIL before max_duration: population-based training's interval end.
  // (Stopped early by anything else, an early stopper, it is done.)
  const auto& until = link.until;
  const bool paused = until && s.stopped_early && trainer.state().timestamp.get(until->unit()) >= *until;
  const int64_t paused_at = paused ? s.steps : -1;
  const int sig = link.stop_signal();
  if (reporter && sig == 0) {
    if (const std::string error = report_final(*reporter, link, metrics, run, paused_at); !error.empty()) {
      if (link.own_signals) {  // a trial process: its stderr goes to the search
        std::fprintf(stderr, "baton train: %s\n", error.c_str());
        return 1;  // the run failed
      }
      throw std::runtime_error(error);
    }
  }
  if (sig != 0) {
    std::fprintf(link.out, "stopped by signal %d after batch %lld; resume with --autoresume\n", sig,
                 static_cast<long long>(s.steps));
    return 128 + sig;
  }
  return 0;
}

// Population-based training resumes a copied state with new parameters: each optimizer's
// hyperparameters (lr, momentum, weight decay, betas, ...) are the recipe's, not the checkpoint's;
// its state (momentum buffers, step counts) is the checkpoint's. Taken before the trainer loads.
using GroupOptions = std::vector<std::unique_ptr<torch::optim::OptimizerOptions>>;

GroupOptions recipe_hyperparameters(const TrainingRun& run) {
  GroupOptions out;
  for (const auto& optimizer : run.options.optimizers()) {
    for (auto& group : optimizer->param_groups()) out.push_back(group.options().clone());
  }
  return out;
}

void restore_hyperparameters(const TrainingRun& run, GroupOptions& saved) {
  std::size_t i = 0;
  for (const auto& optimizer : run.options.optimizers()) {
    for (auto& group : optimizer->param_groups()) {
      if (i < saved.size()) group.set_options(std::move(saved[i++]));
    }
  }
}

// fast_dev_run: a few batches of training and evaluation to see that the recipe runs end to end;
// no run folder, checkpoint or logger file, the metrics printed.
int fast_dev_run(TrainingRun& run, const TrainRequest& args, bool prints, const RunLink& link) {
  if (args.autoresume || args.overwrite || args.profile) {
    throw RecipeError("fast_dev_run writes nothing: --autoresume, --overwrite and --profile do not apply");
  }
  auto callbacks = run.options.callbacks();  // a recipe's trace profiler would write its trace
  std::erase_if(callbacks, [](const auto& c) { return std::dynamic_pointer_cast<TraceProfiler>(c) != nullptr; });
  run.options.callbacks(callbacks);
  add_run_callbacks(run, args, fs::path(), false, link);
  run.options.console_log_interval("0ep").progress_bar(false);
  if (link.own_signals) on_stop_signals(on_stop_signal);
  Trainer trainer(run.options);
  trainer.fit();
  trainer.close();
  if (!prints) return 0;
  const auto n = static_cast<long long>(run.fast_dev_run);
  std::fprintf(link.out, "fast_dev_run: %lld training batch%s and %lld of each evaluation set ran; nothing written\n",
               n, n == 1 ? "" : "es", n);
  std::fprintf(link.out, "  train/loss %.4f\n", trainer.summary().train_loss);
  for (const auto& [label, values] : trainer.state().eval_metrics) {
    for (const auto& [name, value] : values)
      std::fprintf(link.out, "  %s/%s %.4f\n", label.c_str(), name.c_str(), value);
  }
  const int sig = link.stop_signal();
  return sig != 0 ? 128 + sig : 0;
}

int train_recipe_linked(const TrainRequest& args, const RunLink& link) {
  // Fused trials set up one at a time (FusedData::setup_mutex), until the trainer is made.
  std::unique_lock<std::mutex> setup;
  if (link.fused) setup = std::unique_lock<std::mutex>(link.fused->setup_mutex());
  const Recipe recipe = Recipe::load(args.recipe, with_trial_parameters(args.sets, link.parameters));
  TrainingRun run = build_run(recipe, link.fused);
  if (run.options.run_name().empty()) run.options.run_name(fs::path(args.recipe).stem().string());
  const fs::path dir = args.run_dir.empty() ? fs::path("runs") / run.options.run_name() : fs::path(args.run_dir);
  // Under mpirun/srun every rank trains one model with data parallelism; only rank 0 writes the
  // run directory and prints. Under fast_dev_run nothing is written.
  const bool prints = run.options.distributed() == Distributed::kOff || launcher_rank() == 0;
  if (run.fast_dev_run > 0) return fast_dev_run(run, args, prints, link);
  const bool writes = prints;
  if (run.options.save_folder().empty() && run.checkpoints) run.options.save_folder(RunDir(dir).checkpoints().string());
  RunFolder folder;
  if (writes) {
    RunFolder::check_against_inputs(dir, recipe.input_files());
    folder = RunFolder::claim(dir);
    try {
      folder.prepare({.existing = args.overwrite    ? RunFolder::Existing::kStartOver
                                  : args.autoresume ? RunFolder::Existing::kResume
                                                    : RunFolder::Existing::kRefuse,
                      .recipe_yaml = recipe.resolved_yaml(),
                      .save_folder = run.options.save_folder(),
                      .save_filename = run.options.save_filename(),
                      .out = link.out});
    } catch (...) {
      folder.release_refused();
      throw;
    }
  }
  run.options.autoresume(args.autoresume && !args.overwrite);
  const std::vector<std::string> classes = run.train_data->class_names();
  nlohmann::json meta = {{"baton_version", BATON_VERSION_STRING},
                         {"run_name", run.options.run_name()},
                         {"recipe", recipe.resolved_yaml()},
                         {"model", model_meta(run)}};
  if (!classes.empty()) meta["classes"] = classes;  // kept with every checkpoint
  run.options.checkpoint_meta(meta);
  const auto reporter = add_run_callbacks(run, args, dir, writes, link);
  add_run_loggers(run, args, dir, writes, link);
  if (writes) {
    std::fprintf(link.out, "baton train: %s, model %s, %lld training examples, precision %s, %s, run dir %s\n",
                 run.options.run_name().c_str(), run.model_name.c_str(), static_cast<long long>(run.train_data->size()),
                 std::string(to_string(run.options.precision())).c_str(), run.memory_format.c_str(),
                 dir.string().c_str());
    std::fflush(link.out);
  }
  if (link.own_signals) on_stop_signals(on_stop_signal);
  std::unique_ptr<Trainer> made;
  GroupOptions hyperparameters = link.until ? recipe_hyperparameters(run) : GroupOptions{};
  try {
    made = std::make_unique<Trainer>(run.options);  // a resume refused here has written nothing
    restore_hyperparameters(run, hyperparameters);
  } catch (...) {
    if (writes) {
      // The TensorBoard logger made its event file (a name of its own, one record) for this run alone.
      std::error_code ec;
      for (const auto& logger : run.options.loggers()) {
        if (auto tb = std::dynamic_pointer_cast<TensorBoardLogger>(logger)) fs::remove(tb->path(), ec);
      }
      folder.release_refused();
    }
    throw;
  }
  Trainer& trainer = *made;
  // A fused trial's work on a GPU goes to a stream of its own, beside the other trials'. Each was
  // set up on the default stream, one at a time: its stream starts after every setup before it.
  std::optional<OwnStreamScope> own_stream;
  if (link.fused) own_stream.emplace(trainer.device());
  if (setup.owns_lock()) setup.unlock();
  if (writes) {  // the run is accepted
    const std::string model_summary = summarize_run(run).to_string();
    std::fputs(model_summary.c_str(), link.out);
    for (const auto& logger : run.options.loggers()) {  // MLflow's note on the run
      if (auto mlflow = std::dynamic_pointer_cast<MlflowLogger>(logger))
        mlflow->log_tag("mlflow.note.content", "```\n" + model_summary + "```\n");
    }
    folder.write_recipe(recipe.resolved_yaml());
    if (!classes.empty()) folder.write_classes(classes);
  }
  print_start(trainer, run, writes, link.out);
  try {
    trainer.fit();
  } catch (const std::exception& e) {
    const int sig = link.stop_signal();
    if (sig == 0) throw;
    // Asked to stop while a batch was being read (its transfer ended): the last checkpoint stands.
    std::fprintf(link.out, "stopped by signal %d during batch %lld (%s); resume with --autoresume\n", sig,
                 static_cast<long long>(trainer.state().timestamp.batch()) + 1, one_line(e.what()).c_str());
    return 128 + sig;
  }
  // Fused trials go on without this one (one that stopped early, or ended first).
  if (run.options.train_dataloader()) run.options.train_dataloader()->leave_shared_batches();
  for (const Evaluator& evaluator : run.options.eval_dataloaders()) evaluator.loader->leave_shared_batches();
  if (!writes) {
    trainer.close();
    const int sig = link.stop_signal();
    return sig != 0 ? 128 + sig : 0;
  }
  // model.pt and summary.json first: closing sends them (MLflow) with the run's end.
  const int code = finish_run(trainer, run, folder, reporter.get(), link);
  for (const auto& logger : run.options.loggers()) {
    if (auto mlflow = std::dynamic_pointer_cast<MlflowLogger>(logger)) {
      mlflow->set_end_status(code == 0 ? "FINISHED" : link.stop_signal() != 0 ? "KILLED" : "FAILED");
    }
  }
  trainer.close();
  return code;
}

}  // namespace

RunLink run_link_from_environment() {
  RunLink link;
  if (const char* text = std::getenv("BATON_TRIAL_PARAMETERS")) {
    link.parameters = nlohmann::json::parse(text, nullptr, false);
    if (link.parameters.is_discarded() || !link.parameters.is_object()) {
      throw RecipeError(std::string("BATON_TRIAL_PARAMETERS is not a JSON object: ") + text);
    }
  }
  if (const char* metrics = std::getenv("BATON_TRIAL_METRIC")) link.metrics = split_commas(metrics);
  if (const char* constraints = std::getenv("BATON_TRIAL_CONSTRAINTS")) link.constraints = split_commas(constraints);
  link.until = trial_until();
  if (const char* trial = std::getenv("BATON_TRIAL_ID")) link.trial_id = trial;
  if (const char* parent = std::getenv("BATON_MLFLOW_PARENT_RUN_ID")) link.mlflow_parent = parent;
  link.report = [](const nlohmann::json& line) { print_protocol_line(stdout, line); };
  link.stop_signal = [] { return g_signal.load(); };
  return link;
}

void print_protocol_line(std::FILE* out, const nlohmann::json& line) {
  std::fprintf(out, "baton: %s\n", line.dump().c_str());
  std::fflush(out);
}

void flatten_parameters(const nlohmann::json& j, const std::string& prefix, std::vector<std::string>& sets) {
  for (const auto& [key, value] : flat_parameters(j))
    sets.push_back(prefix + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
}

void on_stop_signals(void (*handler)(int)) {
  struct sigaction action = {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

int stop_signal_received() { return g_signal.load(); }

int train_recipe(const TrainRequest& request, const RunLink& given) {
  RunLink link = given;
  if (!link.stop_signal) link.stop_signal = [] { return g_signal.load(); };
  if (!link.report) {
    link.report = [out = link.out](const nlohmann::json& line) { print_protocol_line(out, line); };
  }
  return train_recipe_linked(request, link);
}

ModelSummary summarize_run(const TrainingRun& run) {
  Model& model = *run.options.model();
  at::Tensor example;
  if (run.train_data->size() > 0) {
    const auto params = model.parameters();
    const c10::Device device = params.empty() ? c10::Device(c10::kCPU) : params.front().device();
    example = run.train_data->get_batch(torch::arange(std::min<int64_t>(2, run.train_data->size()))).input.to(device);
  }
  return summarize(model, example);
}

}  // namespace baton
