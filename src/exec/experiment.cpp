#include "baton/exec/experiment.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "baton/core/registry.h"
#include "baton/exec/distributed.h"
#include "baton/exec/middleware.h"
#include "baton/exec/pbt.h"
#include "baton/exec/process.h"
#include "baton/exec/registry.h"
#include "baton/exec/search.h"
#include "baton/exec/storage.h"
#include "baton/exec/table.h"
#include "baton/io/run_dir.h"
#include "baton/io/write.h"
#include "experiment_status.h"
#include "mpi/comm.h"

namespace baton {
namespace {

// Why a trial stopped with its search: a resume runs such trials again.
constexpr const char* kStoppedWithTheSearch = "stopped with the search (signal ";

// Thrown from the progress callback to leave the search loop once stop() was called.
struct ExperimentStopped {};

// What `body` throws as std::invalid_argument or std::runtime_error (a bad space or strategy option,
// a storage that cannot be opened) is the user's input: ExperimentError.
template <typename F>
auto as_input_error(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const ExperimentError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw ExperimentError(e.what());
  } catch (const std::runtime_error& e) {
    throw ExperimentError(e.what());
  }
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// What differs between two search spaces' definitions, in a few words ("" when nothing).
std::string space_difference(const nlohmann::json& stored, const nlohmann::json& given) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : stored.items()) {
    if (!given.contains(key)) {
      parts.push_back(key + " is gone");
    } else if (given[key] != value) {
      parts.push_back(key + " was " + value.dump() + ", now " + given[key].dump());
    }
  }
  for (const auto& [key, value] : given.items()) {
    if (!stored.contains(key)) parts.push_back(key + " is new");
  }
  std::string out;
  for (std::size_t i = 0; i < parts.size() && i < 3; ++i) out += (i ? "; " : "") + parts[i];
  if (parts.size() > 3) out += "; and " + std::to_string(parts.size() - 3) + " more";
  return out;
}

// --devices, --devices-per-trial and --threads-per-trial: this worker's slots (none without them);
// --parallel defaults to their number (1 without), and may not exceed it.
std::vector<TrialSlot> resolve_slots(ExperimentOptions& o) {
  if (o.devices_per_trial() != 0 && o.devices().empty())
    throw ExperimentError("--devices-per-trial needs --devices (the devices to deal out)");
  if (o.parallel() < 0 || o.parallel() > 4096) throw ExperimentError("--parallel must be from 1 to 4096");
  std::vector<TrialSlot> slots;
  try {
    slots = make_trial_slots(o.devices(), o.devices_per_trial() == 0 ? 1 : o.devices_per_trial(), o.threads_per_trial(),
                             o.parallel() == 0 ? 1 : o.parallel(), usable_cpus());
  } catch (const std::invalid_argument& e) {
    throw ExperimentError(e.what());
  }
  const auto count = static_cast<int>(slots.size());
  if (o.parallel() == 0) o.parallel(slots.empty() ? 1 : count);
  if (!slots.empty() && o.parallel() > count) {
    throw ExperimentError("--parallel " + std::to_string(o.parallel()) + ": only " + std::to_string(count) +
                          " trial slots (" + std::to_string(o.devices().size()) + " --devices, " +
                          std::to_string(std::max(1, o.devices_per_trial())) + " per trial)");
  }
  return slots;
}

// --objective and --constraint: what the search optimises (with the objectives' metrics, in
// order). Several objectives: `metric` and `maximize` become the first one's.
Objectives resolve_objectives(ExperimentOptions& o) {
  std::vector<std::string> metrics;
  Objectives out{{o.maximize()}, {}};
  try {
    if (!o.objectives().empty()) out.maximize.clear();
    for (const auto& text : o.objectives()) {
      const Objective objective = parse_objective(text);
      if (std::find(metrics.begin(), metrics.end(), objective.metric) != metrics.end())
        throw std::invalid_argument("--objective " + objective.metric + " is given twice");
      metrics.push_back(objective.metric);
      out.maximize.push_back(objective.maximize);
    }
    for (const auto& text : o.constraints()) out.constraints.push_back(parse_constraint(text));
  } catch (const std::invalid_argument& e) {
    throw ExperimentError(e.what());
  }
  if (metrics.size() > 16) throw ExperimentError("at most 16 --objective flags");
  if (out.constraints.size() > 16) throw ExperimentError("at most 16 --constraint flags");
  if (metrics.empty()) metrics = {o.metric()};
  out.metrics = metrics;
  if (o.objectives().empty()) return out;
  o.metric(metrics.front());
  o.maximize(out.maximize.front());
  return out;
}

}  // namespace

Objectives search_objectives(const ExperimentOptions& o) {
  ExperimentOptions copy = o;
  return resolve_objectives(copy);
}

std::pair<std::vector<std::string>, std::vector<std::string>> reported_metrics(const Objectives& objectives) {
  std::vector<std::string> constrained;
  for (const auto& c : objectives.constraints) constrained.push_back(c.metric);
  return {objectives.metrics, constrained};
}

namespace {

// What --engine may name: each kind, the form a user writes, and whether a file follows its colon.
struct EngineKind {
  std::string form;
  bool takes_file = false;
};
using EngineKinds = Registry<EngineKind>;

const EngineKinds& engine_kinds() {
  static const EngineKinds table("engine", EngineKinds::Order::kRegistration,
                                 {{"process",
                                   [] {
                                     return EngineKind{"process (trials run)", false};
                                   }},
                                  {"table", [] {
                                     return EngineKind{"table:FILE (trials answered from a benchmark table)", true};
                                   }}});
  return table;
}

// --engine table:FILE: the table's path; empty for the process engine.
std::string table_path(const ExperimentOptions& o) {
  if (o.engine().empty() || o.trial_function()) return "";
  const auto colon = o.engine().find(':');
  const std::string name = o.engine().substr(0, colon);
  std::string file = colon == std::string::npos ? "" : o.engine().substr(colon + 1);
  if (!engine_kinds().contains(name) || engine_kinds().make(name).takes_file == file.empty())
    throw ExperimentError("--engine " + o.engine() + ": expected " + experiment_engine_forms());
  return file;
}

void check_options(const ExperimentOptions& o) {
  if (!table_path(o).empty()) {
    if (!o.command().empty() || !o.recipe().empty())
      throw ExperimentError("--engine " + o.engine() +
                            " answers the trials from the table: leave out --command and --recipe");
  } else if (o.command().empty() == o.recipe().empty()) {
    throw ExperimentError("give exactly one of --command CMD or --recipe RECIPE.yaml");
  }
  // Upper bounds too: a number CLI11 saturated (2^63 - 1 for 99999999999999999999) is a typo.
  if (o.trials() < 1 || o.trials() > 1000000000) throw ExperimentError("--trials must be from 1 to 1,000,000,000");
  if (o.parallel() < 1 || o.parallel() > 4096) throw ExperimentError("--parallel must be from 1 to 4096");
  if (!(o.heartbeat() > 0) || !std::isfinite(o.heartbeat()))
    throw ExperimentError("--heartbeat must be a positive number of seconds");
  if (o.trial_timeout() < 0 || !std::isfinite(o.trial_timeout()))
    throw ExperimentError("--trial-timeout must be a positive number of seconds (0: none)");
  if (o.retries() < 0) throw ExperimentError("--retries must be 0 (none) or more");
  if (o.median_stop() < 0) throw ExperimentError("--median-stop must be 0 (off) or a number of completed trials");
  if (o.asha() < 0) throw ExperimentError("--asha must be 0 (off) or the first rung's step");
  if (o.brackets() < 1 || o.brackets() > 64) throw ExperimentError("--brackets must be from 1 to 64");
  if (o.brackets() > 1 && o.asha() <= 0)
    throw ExperimentError("--brackets needs --asha N (the first bracket's first rung)");
  if (!o.launcher().empty() && o.recipe().empty()) {
    throw ExperimentError("--launcher starts a recipe's trials (with --recipe); a --command trial starts itself");
  }
  if (!o.recipe().empty() && !std::filesystem::exists(o.recipe()))
    throw ExperimentError(o.recipe() + ": no such recipe file");
}

const char* direction(bool maximize) { return maximize ? "maximize" : "minimize"; }

// ExperimentOptions::middlewares, made.
std::vector<std::shared_ptr<Middleware>> extra_middlewares(const ExperimentOptions& o) {
  std::vector<std::shared_ptr<Middleware>> out;
  for (const auto& [name, options] : o.middlewares()) {
    try {
      out.push_back(make_middleware(name, options));
    } catch (const std::invalid_argument& e) {
      throw ExperimentError(std::string("middleware: ") + e.what());
    }
  }
  return out;
}

// How each trial runs: the command, or `TRAINER train RECIPE` with the trial's parameters as overrides.
ProcessEngineOptions trial_options(const ExperimentOptions& o, const std::string& worker,
                                   const std::vector<TrialSlot>& slots, const Objectives& objectives,
                                   const PopulationBasedTraining* pbt) {
  ProcessEngineOptions options;
  options.workers(o.parallel());
  options.objectives(objectives.size());
  options.constraints(objectives.constraints.size());
  options.slots(slots);
  if (o.trial_timeout() > 0) options.timeout_s(o.trial_timeout());
  options.log_dir(o.run_dir() / "trials");
  options.env()["BATON_SEARCH_WORKER"] = worker;
  if (o.recipe().empty()) {  // a command's trials (or a table's: none run)
    options.command(o.command());
    return options;
  }
  std::string cmd = (o.launcher().empty() ? "" : o.launcher() + " ") + shell_quote(o.trainer()) + " train " +
                    shell_quote(std::filesystem::absolute(o.recipe()).string());
  for (const auto& s : o.sets()) cmd += " --set " + shell_quote(s);
  // A trial run again (a retry, a resumed search) continues from its own checkpoints.
  cmd += " --set progress_bar=false --autoresume --run-dir " +
         shell_quote(std::filesystem::absolute(o.run_dir() / "trials").string()) + "/\"$BATON_TRIAL_ID\"";
  options.command(cmd);
  // The metrics a recipe's trial reports: its objectives' (comma-separated, in order) and its
  // constraints'.
  const auto [metrics, constrained] = reported_metrics(objectives);
  options.env()["BATON_TRIAL_METRIC"] = join_names(metrics, ",");
  if (!constrained.empty()) options.env()["BATON_TRIAL_CONSTRAINTS"] = join_names(constrained, ",");
  // Population-based training: each run stops at its interval's end.
  if (pbt != nullptr) {
    options.trial_env([pbt](int64_t) {
      return ProcessEngineOptions::Env{{"BATON_TRIAL_UNTIL", pbt->until(pbt->round()).to_string()}};
    });
  }
  return options;
}

}  // namespace

Objectives stored_objectives(const nlohmann::json& meta) {
  Objectives out{{meta.value("direction", std::string("maximize")) != "minimize"}, {}};
  if (!meta.is_object()) return out;
  const auto& listed = meta.contains("objectives") ? meta["objectives"] : nlohmann::json();
  if (listed.is_array() && !listed.empty()) {
    out.maximize.clear();
    for (const auto& o : listed) {
      out.maximize.push_back(o.value("direction", std::string()) != "minimize");
      out.metrics.push_back(o.value("metric", std::string()));
    }
  }
  for (const auto& c : meta.value("constraints", nlohmann::json::array())) {
    try {
      out.constraints.push_back(parse_constraint(c.get<std::string>()));
    } catch (const std::exception&) {  // written by a later version: not ours to judge
    }
  }
  return out;
}

struct Experiment::Impl {
  ExperimentOptions o;
  std::vector<TrialSlot> slots;  // this worker's (--devices, --threads-per-trial)
  bool maximize = true;
  Objectives objectives;  // --objective (or --metric and --direction) and --constraint
  std::string worker = default_worker_name();
  std::optional<mpi::Launch> launch = mpi::launch();  // several workers started by mpirun or srun
  bool join = false;
  std::string storage_url;
  nlohmann::json space_definition;
  nlohmann::json settings = nlohmann::json::object();  // the strategy's options, as stored
  std::unique_ptr<Strategy> strategy;
  PopulationBasedTraining* pbt = nullptr;  // the strategy, when it is pbt
  std::shared_ptr<TrialStorage> storage;
  std::vector<Trial> previous;  // the storage's trials when the experiment began
  std::shared_ptr<DistributedEngine> distributed;
  std::shared_ptr<BenchmarkTable> table;  // --engine table:FILE
  std::shared_ptr<ExecutionEngine> engine;
  std::shared_ptr<MedianStop> median;
  std::shared_ptr<Asha> halving;
  std::vector<std::shared_ptr<Middleware>> extra;  // ExperimentOptions::middlewares
  std::unique_ptr<Chain> chain;
  std::atomic<int> stop_signal{0};

  void say(const char* format, ...) const __attribute__((format(printf, 2, 3)));
  nlohmann::json objectives_json() const;
  nlohmann::json constraints_json() const;
  void keep_front(const SearchProgress& progress);
  void check_metric(const Trial& failed) const;
  void say_front(const std::vector<Trial>& front) const;
  void build_strategy();
  void start_new_study() const;
  void open_study();
  void prepare_resume();
  void join_search(const ProcessEngineOptions& options, const nlohmann::json& meta);
  void own_search(const ProcessEngineOptions& options, const nlohmann::json& meta);
  void make_chain();
  void read_table();
  void check_pbt();
  nlohmann::json pbt_state() const;
  void copy_checkpoint(int64_t id, int64_t from) const;
  std::optional<Trial> run_population(const std::function<void(const SearchProgress&)>& on_progress);
  int stop_trials(const std::set<int64_t>& running);
  ExperimentResult finish(const std::optional<Trial>& best, const detail::StatusLine& status);
};

void Experiment::Impl::say(const char* format, ...) const {
  if (o.out() == nullptr) return;
  va_list args;
  va_start(args, format);
  std::vfprintf(o.out(), format, args);
  va_end(args);
  std::fflush(o.out());
}

nlohmann::json Experiment::Impl::objectives_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < objectives.metrics.size(); ++i)
    out.push_back({{"metric", objectives.metrics[i]}, {"direction", direction(objectives.maximize[i])}});
  return out;
}

nlohmann::json Experiment::Impl::constraints_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : objectives.constraints) out.push_back(c.to_string());
  return out;
}

// Several objectives: the storage keeps the Pareto front (meta "pareto": ids and values), renewed
// when a feasible trial ends (the search loop has just found it).
void Experiment::Impl::keep_front(const SearchProgress& progress) {
  if (objectives.size() < 2 || !progress.last || !objectives.usable(*progress.last)) return;
  nlohmann::json front = nlohmann::json::array();
  for (const auto& t : progress.front) front.push_back({{"id", t.id}, {"values", t.objectives()}});
  storage->set_meta("pareto", front);
}

// A recipe's trial that failed because the search's metric was never logged: the next trials
// would fail the same way, so the search stops (ExperimentError) before it spends its budget.
void Experiment::Impl::check_metric(const Trial& failed) const {
  const auto at = failed.error.find(kUnknownTrialMetric);
  if (at == std::string::npos) return;
  const std::string what = failed.error.substr(at + std::string(kUnknownTrialMetric).size());
  throw ExperimentError("trial " + std::to_string(failed.id) +
                        ": the metric was never logged: " + what.substr(0, what.find('\n')) +
                        "; the search stopped (fix --objective, --metric or --constraint)");
}

void Experiment::Impl::say_front(const std::vector<Trial>& front) const {
  std::string names;
  for (std::size_t i = 0; i < objectives.metrics.size(); ++i)
    names += (i ? ", " : "") + objectives.metrics[i] + (objectives.maximize[i] ? " max" : " min");
  say("Pareto front: %zu trial(s) (%s)\n", front.size(), names.c_str());
  for (const auto& t : front) {
    std::string values;
    const auto v = t.objectives();
    for (std::size_t i = 0; i < v.size() && i < objectives.metrics.size(); ++i) {
      char number[64];
      std::snprintf(number, sizeof number, "%.6g", v[i]);
      values += (i ? ", " : "") + objectives.metrics[i] + " " + number;
    }
    say("  trial %lld: %s  %s\n", static_cast<long long>(t.id), values.c_str(), t.parameters.dump().c_str());
  }
}

// The workers of one search suggest different sequences: rank r (or, started by hand, a number from
// the worker's name) offsets the seed.
void Experiment::Impl::build_strategy() {
  const SearchSpace space = as_input_error([&] {
    space_definition = o.space_definition().is_null() ? SearchSpace::read_file(o.space()) : o.space_definition();
    return SearchSpace::from_json(space_definition, o.space());
  });
  uint64_t seed = o.seed();
  if (join) seed += launch ? static_cast<uint64_t>(launch->rank) : std::hash<std::string>{}(worker) % 1000003;
  strategy = as_input_error([&] {
    for (const auto& option : o.strategy_options()) add_strategy_setting(settings, option);
    const std::vector<bool> directions = objectives.size() > 1 ? objectives.maximize : std::vector<bool>{};
    return make_strategy(o.strategy(), space,
                         StrategyOptions()
                             .seed(seed)
                             .maximize(maximize)
                             .directions(directions)
                             .constraints(objectives.constraints)
                             .settings(settings));
  });
}

// new_study: the run folder's study (its SQLite file and its trials' folders) moves aside, so the
// new study's trials do not resume the old ones' checkpoints.
void Experiment::Impl::start_new_study() const {
  if (storage_url.rfind("sqlite://", 0) != 0) {
    throw ExperimentError("--new-study moves a SQLite study aside; for " + redact_storage_url(storage_url) +
                          ", give another database");
  }
  const std::filesystem::path db = storage_url.substr(std::string("sqlite://").size());
  const std::string suffix = ".replaced-" + std::to_string(::time(nullptr));
  std::error_code ec;
  for (const std::filesystem::path& p : {db, std::filesystem::path(db.string() + "-wal"),
                                         std::filesystem::path(db.string() + "-shm"), o.run_dir() / "trials"}) {
    if (std::filesystem::exists(p, ec)) std::filesystem::rename(p, p.string() + suffix);
  }
  say("the previous study moved aside (*%s)\n", suffix.c_str());
}

void Experiment::Impl::open_study() {
  std::filesystem::create_directories(o.run_dir());
  storage_url = o.storage().empty() ? "sqlite://" + std::filesystem::absolute(RunDir(o.run_dir()).search_db()).string()
                                    : o.storage();
  if (o.new_study()) start_new_study();
  storage = as_input_error([&] { return open_storage(storage_url); });
  previous = storage->load_trials();
  if (!previous.empty() && !o.resume() && !join) {
    throw ExperimentError(redact_storage_url(storage_url) + " already holds " + std::to_string(previous.size()) +
                          " trials; add --resume to continue that search, --join to work on it alongside its other "
                          "workers, or use another --run-dir/--storage");
  }
}

// A resume of a search this process ran before: the stored search must be of the same space; the
// trials a signal stopped with it run again; the trial commands a killed search left running (in
// their own process groups) are stopped, so that running them again is the only run.
void Experiment::Impl::prepare_resume() {
  if (auto stored = storage->meta("search"); stored && stored->contains("space_definition")) {
    const std::string difference = space_difference((*stored)["space_definition"], space_definition);
    if (!difference.empty()) {
      throw ExperimentError(o.space() + " is not the space of the search in " + redact_storage_url(storage_url) + " (" +
                            difference +
                            "); resume with that space, or add --new-study to start another study (the old one is "
                            "moved aside)");
    }
  }
  if (auto stored = storage->meta("search"); stored && stored->contains("objectives")) {
    const nlohmann::json now = {{"objectives", objectives_json()}, {"constraints", constraints_json()}};
    const nlohmann::json then = {{"objectives", (*stored)["objectives"]},
                                 {"constraints", stored->value("constraints", nlohmann::json::array())}};
    if (now != then) {
      throw ExperimentError("the search in " + redact_storage_url(storage_url) + " optimised " + then.dump() +
                            ", not " + now.dump() +
                            "; resume with the same --objective/--metric, --direction and --constraint flags, or add "
                            "--new-study");
    }
  }
  for (auto& t : previous) {
    if (t.status == TrialStatus::kInterrupted && t.error.rfind(kStoppedWithTheSearch, 0) == 0) {
      t.status = TrialStatus::kWaiting;
      t.error.clear();
    }
  }
  if (auto before = storage->meta("worker"); before && before->is_string()) {
    const std::string old = before->get<std::string>();
    if (old != worker && !local_worker_gone(old) &&
        old.substr(0, old.rfind(':')) == worker.substr(0, worker.rfind(':')))
      throw ExperimentError("the search " + old + " (host:pid) is still running on " + redact_storage_url(storage_url) +
                            "; stop it first, or add --join to work on it alongside");
    if (const int n = kill_worker_processes(old); n > 0)
      say("stopped %d process(es) left running by the killed search %s\n", n, old.c_str());
  }
}

// join: this worker takes trials from the queue it shares with the search's other workers.
void Experiment::Impl::join_search(const ProcessEngineOptions& options, const nlohmann::json& meta) {
  DistributedOptions d;
  d.worker(worker);
  d.limit(o.trials());
  d.heartbeat_s(o.heartbeat());
  d.stale_after_s(10 * o.heartbeat());
  std::FILE* out = o.out();
  d.on_dead_worker([out](const std::string& dead) {
    const int n = kill_worker_processes(dead);
    if (out == nullptr) return;
    std::fprintf(out, "worker %s ended while running trials: they go back to the queue%s\n", dead.c_str(),
                 n > 0 ? (", its " + std::to_string(n) + " trial process(es) stopped").c_str() : "");
    std::fflush(out);
  });
  if (!storage->meta("search")) storage->set_meta("search", meta);
  engine = distributed = std::make_shared<DistributedEngine>(storage, std::make_shared<ProcessEngine>(options), d);
  const std::string rank =
      launch ? " (rank " + std::to_string(launch->rank) + " of " + std::to_string(launch->size) + ")" : "";
  say("worker %s%s joins the search in %s (%zu trials there)\n", worker.c_str(), rank.c_str(),
      redact_storage_url(storage_url).c_str(), previous.size());
}

// A search of its own: every change of a trial is stored; a resumed search's trials are loaded
// (the unfinished ones run again).
void Experiment::Impl::own_search(const ProcessEngineOptions& options, const nlohmann::json& meta) {
  std::shared_ptr<TrialTable> process;
  if (o.trial_function()) {
    process = std::make_shared<ThreadPoolEngine>(o.trial_function(), std::max(1, o.parallel()));
  } else if (table) {
    std::vector<std::string> constrained;
    for (const auto& c : objectives.constraints) constrained.push_back(c.metric);
    process = std::make_shared<ThreadPoolEngine>(table->trial_function(objectives.metrics, constrained), o.parallel());
  } else {
    process = std::make_shared<ProcessEngine>(options);
  }
  process->set_observer([s = storage](const Trial& t) { s->save_trial(t); });
  storage->set_meta("search", meta);
  storage->set_meta("worker", worker);
  engine = process;
  if (previous.empty()) return;
  nlohmann::json state = {{"trials", nlohmann::json::array()}};
  int unfinished = 0;
  for (const auto& t : previous) {
    state["trials"].push_back(t.to_json());
    unfinished += t.completed() ? 0 : 1;
  }
  say("resuming: %zu trials in %s, %d unfinished (run again)\n", previous.size(),
      redact_storage_url(storage_url).c_str(), unfinished);
  process->load_state_dict(state);
}

// The middlewares between the strategy and the engine: replays of repeated parameters, retries,
// median stopping, successive halving.
void Experiment::Impl::make_chain() {
  std::vector<std::shared_ptr<Middleware>> stack = {
      std::make_shared<Deduplication>(DeduplicationOptions().action(DuplicateAction::kReplay))};
  if (o.retries() > 0) stack.push_back(std::make_shared<FailureHandler>(FailureHandlerOptions().retries(o.retries())));
  if (o.median_stop() > 0) {
    median = std::make_shared<MedianStop>(MedianStopOptions().maximize(maximize).warmup_trials(o.median_stop()));
    stack.push_back(median);
  }
  if (o.asha() > 0) {
    halving = std::make_shared<Asha>(AshaOptions().maximize(maximize).min_step(o.asha()).brackets(o.brackets()));
    stack.push_back(halving);
  }
  stack.insert(stack.end(), extra.begin(), extra.end());
  chain = std::make_unique<Chain>(stack);
  chain->set_engine(engine);
}

// --engine table:FILE: the table, checked against the space and the metrics before anything is
// written; the trials run in this process.
void Experiment::Impl::read_table() {
  if (o.trial_function() && (join || pbt != nullptr))
    throw ExperimentError("the " + o.engine() + " search runs its trials in this process: no --join, mpirun or pbt");
  const std::string path = table_path(o);
  if (path.empty()) return;
  if (join)
    throw ExperimentError("--engine " + o.engine() +
                          " answers trials in one process; --join and mpirun are not supported");
  if (pbt != nullptr) throw ExperimentError("--strategy pbt trains recipes; a benchmark table cannot continue a trial");
  try {
    table = std::make_shared<BenchmarkTable>(BenchmarkTable::read_csv(path));
    std::vector<std::string> metrics = objectives.metrics;
    for (const auto& c : objectives.constraints) metrics.push_back(c.metric);
    table->check(SearchSpace::from_json(space_definition, o.space()), metrics);
  } catch (const std::invalid_argument& e) {
    throw ExperimentError(e.what());
  }
}

// Population-based training copies the trials' checkpoints: it trains a recipe, in one search
// process, without the middlewares that end trials early.
void Experiment::Impl::check_pbt() {
  if (!o.command().empty())
    throw ExperimentError(
        "--strategy pbt copies the checkpoints of a recipe's trials, which a --command trial does not have; give "
        "--recipe");
  if (join) throw ExperimentError("--strategy pbt runs in one search process; --join and mpirun are not supported");
  if (o.asha() > 0 || o.median_stop() > 0 || o.retries() > 0)
    throw ExperimentError(
        "--strategy pbt decides itself which trials go on; leave out --asha, --median-stop and --retries");
  o.trials(pbt->options().population());
}

// The checkpoint `from` saved at the interval's end (its checkpoints/latest) becomes `id`'s latest;
// `id`'s own checkpoints go (its run continues from the copy).
void Experiment::Impl::copy_checkpoint(int64_t id, int64_t from) const {
  namespace fs = std::filesystem;
  const fs::path source = RunDir(o.run_dir() / "trials" / std::to_string(from)).checkpoints();
  const fs::path target = RunDir(o.run_dir() / "trials" / std::to_string(id)).checkpoints();
  std::error_code ec;
  const fs::path latest = source / "latest";
  const fs::path name = fs::is_symlink(latest, ec) ? fs::read_symlink(latest, ec).filename() : fs::path();
  if (name.empty() || !fs::is_regular_file(source / name, ec))
    throw ExperimentError("pbt: trial " + std::to_string(from) + " has no checkpoint at " + latest.string() +
                          " to copy to trial " + std::to_string(id) +
                          " (leave the recipe's save_folder unset: each trial saves in its run folder)");
  fs::create_directories(target, ec);
  const fs::path tmp = target / (name.string() + ".pbt-copy");
  fs::copy_file(source / name, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(tmp, target / name, ec);
  if (ec) throw std::runtime_error("pbt: could not copy " + (source / name).string() + ": " + ec.message());
  for (const auto& entry : fs::directory_iterator(target, ec)) {
    if (entry.path().filename() != name && entry.path().filename() != "latest") fs::remove(entry.path(), ec);
  }
  const fs::path link = target / "latest.pbt-copy";
  fs::remove(link, ec);
  fs::create_symlink(name, link, ec);
  if (!ec) fs::rename(link, target / "latest", ec);
  if (ec) throw std::runtime_error("pbt: could not point " + (target / "latest").string() + ": " + ec.message());
}

std::optional<Trial> Experiment::Impl::run_population(const std::function<void(const SearchProgress&)>& on_progress) {
  auto* table = dynamic_cast<TrialTable*>(engine.get());
  PbtHooks hooks;
  hooks.copy_state = [this](int64_t id, int64_t from) { copy_checkpoint(id, from); };
  hooks.save_state = [this](const nlohmann::json& state) { storage->set_meta("pbt", state); };
  hooks.on_progress = on_progress;
  return run_pbt(*pbt, *table, pbt_state(), hooks);
}

// The stored PBT loop state (meta pbt; null for a new search), checked: a state baton did not
// write is refused, not followed.
nlohmann::json Experiment::Impl::pbt_state() const {
  const auto state = storage->meta("pbt");
  if (!state) return nullptr;
  try {
    const nlohmann::json& s = *state;
    bool ok = s.is_object() && s.at("round").is_number_integer() && s["round"].get<int64_t>() >= 0;
    if (ok && s.contains("plan")) {
      const nlohmann::json& plan = s["plan"];
      ok = plan.at("step").is_number_integer() && plan.at("decisions").is_array() && plan.value("at", "").size() < 64;
      (void)plan.value("copied", false);
      for (const auto& d : plan["decisions"]) {
        ok = ok && d.at("id").is_number_integer() && d.at("from").is_number_integer() &&
             d.at("parameters").is_object() && d.at("changes").is_object() && d.at("score").is_number() &&
             d.at("from_score").is_number();
      }
    }
    if (ok) return s;
  } catch (const nlohmann::json::exception&) {  // a key missing or of another type
  }
  throw ExperimentError(redact_storage_url(storage_url) +
                        ": its population-based training state (meta pbt) is not what baton writes; resume the "
                        "storage the search wrote, or add --new-study");
}

Experiment::Experiment(ExperimentOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.o = std::move(options);
  m.slots = resolve_slots(m.o);
  m.objectives = resolve_objectives(m.o);
  check_options(m.o);
  m.maximize = m.o.maximize();
  m.extra = extra_middlewares(m.o);  // before anything is written: a bad name or option is the user's
  if (m.launch && m.launch->size <= 1) m.launch.reset();
  m.join = m.o.join() || m.launch.has_value();
  m.build_strategy();
  m.pbt = dynamic_cast<PopulationBasedTraining*>(m.strategy.get());
  m.read_table();
  if (m.pbt != nullptr) m.check_pbt();  // before anything is written
  m.open_study();
  // A resumed PBT search's trials run again as the engine opens: at the interval it was in.
  if (m.pbt != nullptr) {
    if (const auto state = m.pbt_state(); !state.is_null()) m.pbt->set_round(state["round"].get<int64_t>());
  }
  if (!m.join && m.o.resume()) m.prepare_resume();
  const ProcessEngineOptions trials = trial_options(m.o, m.worker, m.slots, m.objectives, m.pbt);
  const nlohmann::json meta = {{"space", m.o.space()},
                               {"space_definition", m.space_definition},
                               {"command", trials.command()},
                               {"engine", m.table || m.o.trial_function() ? m.o.engine() : std::string("process")},
                               {"strategy", m.o.strategy()},
                               {"strategy_options", m.settings},
                               {"direction", direction(m.maximize)},
                               {"seed", m.o.seed()},
                               {"objectives", m.objectives_json()},
                               {"constraints", m.constraints_json()},
                               {"recipe", m.o.recipe().empty() ? "" : std::filesystem::absolute(m.o.recipe()).string()},
                               {"sets", m.o.sets()}};
  if (m.join) {
    m.join_search(trials, meta);
  } else {
    m.own_search(trials, meta);
  }
  m.make_chain();
}

Experiment::~Experiment() = default;

void Experiment::stop(int why) noexcept { impl_->stop_signal.store(why == 0 ? SIGTERM : why); }

// After stop(): ends what still runs, stores the trials it stopped as interrupted by it, says how
// to continue; returns how many were interrupted.
int Experiment::Impl::stop_trials(const std::set<int64_t>& running) {
  std::set<int64_t> stopped = running;
  for (const auto& t : chain->list()) {
    if (t.status != TrialStatus::kRunning) continue;
    stopped.insert(t.id);  // ended by the stop too: run again on resume
    chain->kill(t.id);
  }
  chain->shutdown();  // waits for the trials' processes to end
  int interrupted = 0;
  for (Trial t : chain->list()) {
    if (t.status != TrialStatus::kInterrupted) continue;
    // Killed by the stop, or never started because of it (the engine's shutdown says "before the
    // trial started", "before the trial could run" or "killed before it started").
    const bool never_ran =
        t.error.find("before the trial") != std::string::npos || t.error.find("before it started") != std::string::npos;
    if (!stopped.count(t.id) && !never_ran) continue;
    t.error = std::string(kStoppedWithTheSearch) + std::to_string(stop_signal.load()) + "); --resume runs it again";
    if (!join) storage->save_trial(t);
    ++interrupted;
  }
  say("\nstopped by signal %d: %d trial(s) interrupted; run the same command with --resume to continue\n",
      stop_signal.load(), interrupted);
  return interrupted;
}

// RUN_DIR/summary.json and the closing lines.
ExperimentResult Experiment::Impl::finish(const std::optional<Trial>& best, const detail::StatusLine& status) {
  std::map<std::string, int> by_status;
  const auto all = chain->list();
  for (const auto& t : all) ++by_status[to_string(t.status)];
  nlohmann::json summary = {{"best", nullptr},
                            {"trials", {{"total", all.size()}, {"by_status", by_status}}},
                            {"wall_s", status.elapsed()},
                            {"direction", direction(maximize)},
                            {"storage", redact_storage_url(storage_url)}};
  if (best) summary["best"] = {{"id", best->id}, {"value", *best->metrics.final}, {"parameters", best->parameters}};
  summary["objectives"] = objectives_json();
  std::vector<Trial> front;
  if (!objectives.constraints.empty()) {
    summary["constraints"] = constraints_json();
    summary["trials"]["feasible"] = std::count_if(
        all.begin(), all.end(), [&](const Trial& t) { return objectives.usable(t) && objectives.violation(t) <= 0; });
  }
  if (objectives.size() > 1) {
    front = pareto_front(all, objectives);
    summary["pareto"] = nlohmann::json::array();
    for (const auto& t : front)
      summary["pareto"].push_back({{"id", t.id}, {"values", t.objectives()}, {"parameters", t.parameters}});
  }
  if (pbt != nullptr) {  // population-based training: how often a trial took another's state
    summary["exploits"] = std::accumulate(all.begin(), all.end(), int64_t{0}, [](int64_t n, const Trial& t) {
      return n + static_cast<int64_t>(t.exploits.size());
    });
  }
  if (distributed) summary["worker"] = {{"name", worker}, {"requeued_from_silent_workers", distributed->requeued()}};
  // Written whole then renamed (flushed: a full disk leaves the one before): the workers of a
  // shared search may write it at the same time.
  const RunDir dir(o.run_dir());
  write_file_atomically(dir.summary().string(), summary.dump(2) + "\n");
  for (const auto& t : all) {
    if (t.status == TrialStatus::kFailed)
      say("trial %lld failed: %s\n", static_cast<long long>(t.id), t.error.substr(0, 300).c_str());
  }
  if (distributed && distributed->requeued() > 0)
    say("this worker put %lld trial(s) of silent workers back in the queue\n",
        static_cast<long long>(distributed->requeued()));
  if (halving) say("successive halving ended %lld trials early\n", static_cast<long long>(halving->kills()));
  if (median) say("median stopping ended %lld trials early\n", static_cast<long long>(median->kills()));
  if (objectives.size() > 1) {
    say_front(front);
  } else if (best) {
    say("best: trial %lld, %s = %.6g, parameters %s\n", static_cast<long long>(best->id),
        o.recipe().empty() && !table && o.objectives().empty() ? "value" : o.metric().c_str(), *best->metrics.final,
        best->parameters.dump().c_str());
  } else {
    say(objectives.constraints.empty() ? "no trial finished with a value\n" : "no feasible trial\n");
  }
  say("summary: %s\n", dir.summary().string().c_str());
  ExperimentResult result{best, 0, 0, dir.summary()};
  result.pareto = std::move(front);
  return result;
}

ExperimentResult Experiment::run() {
  Impl& m = *impl_;
  detail::StatusLine status(*m.chain, m.o.trials(), m.o.out());
  m.say("baton search: %s, %lld trials, %d at once, strategy %s (%s), storage %s\n", m.o.space().c_str(),
        static_cast<long long>(m.o.trials()), m.o.parallel(), m.o.strategy().c_str(), direction(m.maximize),
        redact_storage_url(m.storage_url).c_str());
  if (m.strategy != nullptr && !m.strategy->plan().empty()) m.say("%s\n", m.strategy->plan().c_str());
  std::optional<Trial> best;
  bool stopped = false;
  detail::StatusTicker ticker(*m.chain, status, m.stop_signal);  // stopped by its destructor when run_search throws
  try {
    const auto on_progress = [&](const SearchProgress& p) {
      ticker.progress(p);
      m.keep_front(p);
      if (m.stop_signal.load() != 0) throw ExperimentStopped{};
      if (p.last && p.last->status == TrialStatus::kFailed) m.check_metric(*p.last);
    };
    best = m.pbt != nullptr ? m.run_population(on_progress)
                            : run_search(*m.strategy, *m.chain, m.o.trials(), m.objectives, on_progress);
  } catch (const ExperimentStopped&) {
    stopped = true;
  } catch (const ExperimentError&) {  // a metric the trials never log: every trial would fail
    ticker.stop();
    for (const auto& t : m.chain->list()) {
      if (!t.completed()) m.chain->kill(t.id);
    }
    m.chain->shutdown();
    throw;
  }
  ticker.stop();
  if (stopped || m.stop_signal.load() != 0) {
    const int interrupted = m.stop_trials(ticker.stopped());
    return {best, m.stop_signal.load(), interrupted, {}};
  }
  status.print(ticker.last(), true);
  if (status.tty()) m.say("\n");
  m.chain->shutdown();
  return m.finish(best, status);
}

std::string experiment_engine_forms() {
  std::vector<std::string> forms;
  for (const std::string& name : engine_kinds().names()) forms.push_back(engine_kinds().make(name).form);
  return either_of(forms);
}

}  // namespace baton
