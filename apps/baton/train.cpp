// baton train RECIPE.yaml [--set key=value]... [--run-dir DIR] [--autoresume | --overwrite]
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "baton/callbacks/trace_profiler.h"
#include "baton/core/device.h"
#include "baton/core/options.h"
#include "baton/exec/experiment.h"
#include "baton/exec/space.h"
#include "baton/io/file.h"
#include "baton/io/run_dir.h"
#include "baton/io/text.h"
#include "baton/io/url.h"
#include "baton/io/write.h"
#include "baton/loggers/mlflow_logger.h"
#include "baton/loggers/registry.h"
#include "baton/loggers/table_files.h"
#include "baton/loggers/tensorboard_logger.h"
#include "baton/models/summary.h"
#include "baton/train/checkpoint.h"
#include "baton/train/checkpoint_saver.h"
#include "baton/train/fused.h"
#include "baton/train/ranks.h"
#include "baton/train/recipe.h"
#include "baton/version.h"
#include "commands.h"
#include "train_run.h"

namespace baton::cli {
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

std::vector<std::string> present(const fs::path& folder, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& name : names) {
    if (fs::exists(folder / name, ec) || fs::is_symlink(folder / name, ec)) out.push_back(name);
  }
  return out;
}

// Moves `names` of `folder` into folder/replaced-<time>/ (nothing is deleted); returns that folder.
fs::path move_aside(const fs::path& folder, const std::vector<std::string>& names) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "replaced-%Y%m%d-%H%M%S", std::localtime(&now));
  fs::path aside = folder / stamp;
  for (int n = 2; fs::exists(aside); ++n) aside = folder / (std::string(stamp) + "-" + std::to_string(n));
  fs::create_directories(aside);
  for (const auto& name : names) fs::rename(folder / name, aside / name);
  return aside;
}

// The files of `folder` that are not this run's checkpoints: another save_filename's, or unreadable.
std::vector<std::string> other_files(const fs::path& folder) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name != "latest" && !name.starts_with(".")) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// --autoresume in a folder with a run but no checkpoint of this recipe to resume from: a run killed
// before its first checkpoint (the same recipe) starts over with its files moved aside; a run this
// one does not continue (finished, another save_filename or model, another recipe) is refused.
void start_over_or_refuse(const fs::path& dir, const std::vector<std::string>& previous, const TrainingRun& run,
                          const std::string& resolved_yaml, std::FILE* out) {
  const fs::path save = run.options.save_folder();
  if (!save.empty() && !find_resumable_checkpoint(save.string(), run.options.save_filename()).empty()) return;
  std::error_code ec;
  const RunDir files(dir);
  std::string why;
  if (fs::exists(files.summary(), ec) || fs::exists(files.model(), ec)) {
    why = "a finished run";
  } else if (const auto others = save.empty() ? std::vector<std::string>{} : other_files(save); !others.empty()) {
    why = "checkpoints this recipe's save_filename '" + run.options.save_filename() + "' does not make (" +
          join_names(others) + ")";
  } else if (fs::is_regular_file(files.recipe(), ec) &&
             read_file(files.recipe().string(), {.what = "the run's recipe"}) != resolved_yaml) {
    why = "the run of another recipe (its recipe.yaml differs)";
  }
  if (!why.empty()) {
    throw RecipeError(dir.string() + ": --autoresume has nothing to resume here: the folder holds " + why +
                      ", and starting over would replace its " + join_names(previous) +
                      "; --overwrite starts over (moving them aside), or give another --run-dir");
  }
  std::fprintf(out, "baton train: no checkpoint in %s to resume from: starting over (the files there moved to %s)\n",
               dir.string().c_str(), move_aside(dir, previous).string().c_str());
}

// A run folder that already holds a run is continued (--autoresume), started over with the old
// files moved aside (--overwrite), or refused: silently writing over it would lose them.
void prepare_run_folder(const fs::path& dir, const TrainArgs& args, const TrainingRun& run,
                        const std::string& resolved_yaml, std::FILE* out) {
  const std::vector<std::string> previous = present(dir, RunDir::run_files());
  if (previous.empty()) return;
  if (args.overwrite) {
    std::fprintf(out, "baton train: %s's previous run moved to %s\n", dir.string().c_str(),
                 move_aside(dir, previous).string().c_str());
    // Checkpoints kept elsewhere (save_folder) are moved aside there, so the new run cannot resume them.
    const fs::path save = run.options.save_folder();
    std::vector<std::string> files = present(save, {"latest"});
    for (const auto& name : checkpoint_names(save.string(), run.options.save_filename())) files.push_back(name);
    if (!save.empty() && !files.empty()) move_aside(save, files);
    return;
  }
  if (args.autoresume) return start_over_or_refuse(dir, previous, run, resolved_yaml, out);
  throw RecipeError(dir.string() + ": a run is already there (" + join_names(previous) +
                    "); --autoresume continues it, --overwrite starts over (moving its files aside), or give "
                    "another --run-dir");
}

// The run directory, held by this process alone: an OS lock on RUN_DIR/.lock, released when the
// process ends however it ends. A second `baton train` on the same folder is refused, naming the
// first. `created`: the folder did not exist before (removed again if the run is refused).
struct RunDirectory {
  fs::path dir;
  bool created = false;
  std::unique_ptr<FileLock> lock{};
};

// The run folder is never one of the recipe's data folders, nor inside one (its checkpoints would
// become a class folder, its files read as data), nor one of its files.
void check_run_dir_against_inputs(const fs::path& dir, const Recipe& recipe) {
  std::error_code ec;
  for (const std::string& input : recipe.input_files()) {
    const bool folder = fs::is_directory(input, ec);
    if (resolves_inside(dir.string(), input) && (folder || fs::equivalent(dir, input, ec))) {
      throw RecipeError(dir.string() + ": the run folder is " +
                        (folder && !fs::equivalent(dir, input, ec) ? "inside " : "") + input +
                        ", which the recipe reads; give another --run-dir");
    }
  }
}

RunDirectory claim_run_dir(const fs::path& dir) {
  RunDirectory out;
  out.dir = dir;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw RecipeError(dir.string() + ": " + file_kind(dir.string()) +
                      " is there, not a folder; give another --run-dir");
  }
  out.created = !fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": cannot create the run directory (" + ec.message() + ")");
  out.lock = std::make_unique<FileLock>(RunDir(dir).lock().string());
  if (!out.lock->held()) {
    const long pid = out.lock->holder();
    throw RecipeError(dir.string() + ": another baton" + (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "") +
                      " is training in this run directory; wait for it to end or stop it, or give another --run-dir");
  }
  remove_stale_temporaries(dir.string());
  return out;
}

// A refused run leaves no folder it made: everything in it is this process's (it held the lock).
void release_refused(RunDirectory& run) {
  if (!run.created) return;
  run.lock.reset();
  std::error_code ec;
  fs::remove_all(run.dir, ec);
}

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
std::shared_ptr<TrialReporter> add_run_callbacks(TrainingRun& run, const TrainArgs& args, const fs::path& dir,
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
void add_run_loggers(TrainingRun& run, const TrainArgs& args, const fs::path& dir, bool writes, const RunLink& link) {
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
int finish_run(Trainer& trainer, const TrainingRun& run, const fs::path& dir, const TrialReporter* reporter,
               const RunLink& link) {
  const RunSummary& s = trainer.summary();
  {
    // Serialised in memory, then written as checkpoints are: a full disk is an error, not an abort
    // inside LibTorch's writer, and never a half-written model.pt.
    std::ostringstream bytes;
    torch::save(std::dynamic_pointer_cast<torch::nn::Module>(run.options.model()), bytes);
    write_file_atomically(RunDir(dir).model().string(), bytes.str());
  }
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [label, values] : trainer.state().eval_metrics) {
    for (const auto& [name, value] : values) metrics[std::string(label).append("/").append(name)] = value;
  }
  if (s.steps > 0) metrics["train/loss"] = s.train_loss;
  const nlohmann::json summary = {{"metrics", metrics},           {"train_s", s.train_s},
                                  {"eval_s", s.eval_s},           {"steps", s.steps},
                                  {"samples", s.samples},         {"samples_per_s", s.samples_per_s()},
                                  {"graph_steps", s.graph_steps}, {"stopped_early", s.stopped_early}};
  write_file_atomically(RunDir(dir).summary().string(), summary.dump(2) + "\n");
  std::fprintf(link.out, "done: %lld steps in %.1f s (%.0f samples/s, evaluation %.1f s)",
               static_cast<long long>(s.steps), s.train_s, s.samples_per_s(), s.eval_s);
  if (metrics.contains("eval/accuracy"))
    std::fprintf(link.out, ", test accuracy %.4f", metrics["eval/accuracy"].get<double>());
  std::fprintf(link.out, "\nsummary: %s\n", RunDir(dir).summary().string().c_str());
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
        return kRunFailed;
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
int fast_dev_run(TrainingRun& run, const TrainArgs& args, bool prints, const RunLink& link) {
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

int run_training(const TrainArgs& args, const RunLink& link) {
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
  RunDirectory claimed;
  if (writes) {
    check_run_dir_against_inputs(dir, recipe);
    claimed = claim_run_dir(dir);
    try {
      prepare_run_folder(dir, args, run, recipe.resolved_yaml(), link.out);
    } catch (...) {
      release_refused(claimed);
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
      release_refused(claimed);
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
    write_file_atomically(RunDir(dir).recipe().string(), recipe.resolved_yaml());
    if (!classes.empty()) {
      std::string lines;
      for (const auto& name : classes) lines += name + "\n";
      write_file_atomically(RunDir(dir).classes().string(), lines);
    }
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
  const int code = finish_run(trainer, run, dir, reporter.get(), link);
  for (const auto& logger : run.options.loggers()) {
    if (auto mlflow = std::dynamic_pointer_cast<MlflowLogger>(logger)) {
      mlflow->set_end_status(code == 0 ? "FINISHED" : link.stop_signal() != 0 ? "KILLED" : "FAILED");
    }
  }
  trainer.close();
  return code;
}

void flatten_parameters(const nlohmann::json& j, const std::string& prefix, std::vector<std::string>& sets) {
  for (const auto& [key, value] : flat_parameters(j))
    sets.push_back(prefix + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
}

void add_train(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "train a model from a recipe");
  cmd->add_option("recipe", args->recipe, "recipe YAML file")->required();
  cmd->add_option("--set", args->sets, "override a recipe key: key.path=value (repeatable)");
  cmd->add_option("--run-dir", args->run_dir, "where the run writes its files (default: runs/<run_name>)");
  cmd->add_flag(
      "--autoresume", args->autoresume,
      "resume from the run's checkpoints/latest if it is good (else the newest good checkpoint, else load_path)");
  cmd->add_flag("--overwrite,--restart", args->overwrite,
                "start over in a run folder that holds a run: its files (and checkpoints) are moved to "
                "RUN_DIR/replaced-<time>/, not deleted");
  cmd->add_flag("--profile", args->profile,
                "record batches 2-6 as a Chrome trace in RUN_DIR/traces (open in chrome://tracing or Perfetto)");
  cmd->callback([args] {
    if (const int code = run_training(*args, run_link_from_environment()); code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace baton::cli
