// baton search: run many trials of a command or a recipe, suggested by a strategy.
// baton trials ls|show: read a search's storage.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "baton/exec/distributed.h"
#include "baton/exec/middleware.h"
#include "baton/exec/process.h"
#include "baton/exec/search.h"
#include "baton/exec/storage.h"
#include "baton/io/run_dir.h"
#include "baton/train/trainer.h"
#include "commands.h"

namespace baton::cli {
namespace {

struct SearchArgs {
  std::string space;
  std::string command;
  std::string recipe;
  std::string metric = "eval/accuracy";
  int64_t trials = 10;
  int parallel = 1;
  std::string strategy = "tpe";
  std::vector<std::string> strategy_options;  // KEY=VALUE
  std::string direction = "maximize";
  uint64_t seed = 0;
  std::string storage;
  std::string run_dir = "runs/search";
  bool resume = false;
  bool new_study = false;
  double trial_timeout = 0;
  int retries = 0;
  int median_stop = 0;
  int64_t asha = 0;
  int brackets = 1;
  bool join = false;
  double heartbeat = 2.0;
  std::vector<std::string> sets;
};

// The rank and size of this process when it was started by mpirun or srun (several workers of
// one search), else nullopt.
std::optional<std::pair<int, int>> launcher_rank() {
  if (baton::launcher_size() <= 1) return std::nullopt;
  return std::make_pair(baton::launcher_rank(), baton::launcher_size());
}

// SIGTERM / SIGINT: the first stops the search (its running trials' process groups are ended and
// stored as interrupted, for --resume to run again); a second one exits at once.
std::atomic<int> g_search_signal{0};

extern "C" void on_search_signal(int sig) {
  if (g_search_signal.exchange(sig) != 0) _exit(128 + sig);
}

// Why a trial stopped with its search: --resume runs such trials again.
constexpr const char* kStoppedWithTheSearch = "stopped with the search (signal ";

// Thrown from the progress callback to leave the search loop once a signal stopped it.
struct SearchStopped {};

class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What `body` throws as std::invalid_argument or std::runtime_error (a bad space or strategy option,
// a storage that cannot be opened) is the user's input: BadInput, exit 2.
template <typename F>
auto as_bad_input(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  } catch (const std::runtime_error& e) {
    throw BadInput(e.what());
  }
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("baton") : p.string();
}

std::string format_duration(double s) {
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
  return buf;
}

// After a signal: ends what still runs, stores the trials it stopped as interrupted by it, says how
// to continue, and returns the exit code of a process ended by that signal.
int stop_search(Chain& chain, TrialStorage* storage, std::set<int64_t> stopped, bool join) {
  const int sig = g_search_signal.load();
  for (const auto& t : chain.list()) {
    if (t.status != TrialStatus::kRunning) continue;
    stopped.insert(t.id);  // ended by the signal too: run again on --resume
    chain.kill(t.id);
  }
  chain.shutdown();  // waits for the trials' processes to end
  int interrupted = 0;
  for (Trial t : chain.list()) {
    if (t.status != TrialStatus::kInterrupted) continue;
    // Killed by the signal, or never started because of it (the engine's shutdown says "before the
    // trial started", "before the trial could run" or "killed before it started").
    const bool never_ran =
        t.error.find("before the trial") != std::string::npos || t.error.find("before it started") != std::string::npos;
    if (!stopped.count(t.id) && !never_ran) continue;
    t.error = std::string(kStoppedWithTheSearch) + std::to_string(sig) + "); --resume runs it again";
    if (storage != nullptr && !join) storage->save_trial(t);
    ++interrupted;
  }
  std::printf("\nstopped by signal %d: %d trial(s) interrupted; run the same command with --resume to continue\n", sig,
              interrupted);
  std::fflush(stdout);
  return 128 + sig;
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

// --new-study: the run folder's study (its SQLite file and its trials' folders) moves aside, so the
// new study's trials do not resume the old ones' checkpoints.
void start_new_study(const std::filesystem::path& dir, const std::string& storage_url) {
  if (storage_url.rfind("sqlite://", 0) != 0) {
    throw BadInput("--new-study moves a SQLite study aside; for " + redact_storage_url(storage_url) +
                   ", give another database");
  }
  const std::filesystem::path db = storage_url.substr(std::string("sqlite://").size());
  const std::string suffix = ".replaced-" + std::to_string(::time(nullptr));
  std::error_code ec;
  for (const std::filesystem::path& p :
       {db, std::filesystem::path(db.string() + "-wal"), std::filesystem::path(db.string() + "-shm"), dir / "trials"}) {
    if (std::filesystem::exists(p, ec)) std::filesystem::rename(p, p.string() + suffix);
  }
  std::printf("the previous study moved aside (*%s)\n", suffix.c_str());
}

void check_search_args(const SearchArgs& a) {
  if (a.command.empty() == a.recipe.empty())
    throw BadInput("give exactly one of --command CMD or --recipe RECIPE.yaml");
  if (a.direction != "maximize" && a.direction != "minimize")
    throw BadInput("--direction must be maximize or minimize, got '" + a.direction + "'");
  // Upper bounds too: a number CLI11 saturated (2^63 - 1 for 99999999999999999999) is a typo.
  if (a.trials < 1 || a.trials > 1000000000) throw BadInput("--trials must be from 1 to 1,000,000,000");
  if (a.parallel < 1 || a.parallel > 4096) throw BadInput("--parallel must be from 1 to 4096");
  if (!(a.heartbeat > 0) || !std::isfinite(a.heartbeat))
    throw BadInput("--heartbeat must be a positive number of seconds");
  if (a.trial_timeout < 0 || !std::isfinite(a.trial_timeout)) {
    throw BadInput("--trial-timeout must be a positive number of seconds (0: none)");
  }
  if (a.median_stop < 0) throw BadInput("--median-stop must be 0 (off) or a number of completed trials");
  if (a.asha < 0) throw BadInput("--asha must be 0 (off) or the first rung's step");
  if (a.brackets < 1 || a.brackets > 64) throw BadInput("--brackets must be from 1 to 64");
  if (a.brackets > 1 && a.asha <= 0) throw BadInput("--brackets needs --asha N (the first bracket's first rung)");
  if (!a.recipe.empty() && !std::filesystem::exists(a.recipe)) throw BadInput(a.recipe + ": no such recipe file");
}

// Who runs the search: this process's worker name, its launcher rank, and whether it joins a shared search.
struct SearchWorker {
  std::string name = default_worker_name();
  std::optional<std::pair<int, int>> rank = launcher_rank();
  bool join = false;
};

// The strategy, with its options (`settings` gets them, as the search stores them). The workers of
// one search suggest different sequences: rank r (or, started by hand, a number from the worker's
// name) offsets the seed.
std::unique_ptr<Strategy> make_search_strategy(const SearchArgs& a, const SearchSpace& space, const SearchWorker& w,
                                               nlohmann::json& settings) {
  uint64_t seed = a.seed;
  if (w.join) seed += w.rank ? static_cast<uint64_t>(w.rank->first) : std::hash<std::string>{}(w.name) % 1000003;
  return as_bad_input([&] {
    for (const auto& option : a.strategy_options) add_strategy_setting(settings, option);
    return make_strategy(a.strategy, space,
                         StrategyOptions().seed(seed).maximize(a.direction == "maximize").settings(settings));
  });
}

// --resume of a search this process ran before: the stored search must be of the same space; the
// trials a signal stopped with it run again; the trial commands a killed search left running (in
// their own process groups) are stopped, so that running them again is the only run.
void prepare_resume(const SearchArgs& a, TrialStorage& storage, const std::string& storage_url,
                    const nlohmann::json& space_definition, const SearchWorker& w, std::vector<Trial>& previous) {
  if (auto stored = storage.meta("search"); stored && stored->contains("space_definition")) {
    const std::string difference = space_difference((*stored)["space_definition"], space_definition);
    if (!difference.empty()) {
      throw BadInput(a.space + " is not the space of the search in " + redact_storage_url(storage_url) + " (" +
                     difference +
                     "); resume with that space, or add --new-study to start another study (the old one is "
                     "moved aside)");
    }
  }
  for (auto& t : previous) {
    if (t.status == TrialStatus::kInterrupted && t.error.rfind(kStoppedWithTheSearch, 0) == 0) {
      t.status = TrialStatus::kWaiting;
      t.error.clear();
    }
  }
  if (auto before = storage.meta("worker"); before && before->is_string()) {
    const std::string old = before->get<std::string>();
    if (old != w.name && !local_worker_gone(old) &&
        old.substr(0, old.rfind(':')) == w.name.substr(0, w.name.rfind(':')))
      throw BadInput("the search " + old + " (host:pid) is still running on " + redact_storage_url(storage_url) +
                     "; stop it first, or add --join to work on it alongside");
    if (const int n = kill_worker_processes(old); n > 0)
      std::printf("stopped %d process(es) left running by the killed search %s\n", n, old.c_str());
  }
}

// How each trial runs: --command, or `baton train RECIPE` with the trial's parameters as overrides.
ProcessEngineOptions trial_options(const SearchArgs& a, const std::filesystem::path& dir, const std::string& worker) {
  ProcessEngineOptions options;
  options.workers(a.parallel);
  if (a.trial_timeout > 0) options.timeout_s(a.trial_timeout);
  options.log_dir(dir / "trials");
  options.env()["BATON_SEARCH_WORKER"] = worker;
  if (!a.command.empty()) {
    options.command(a.command);
    return options;
  }
  std::string cmd = shell_quote(self_exe()) + " train " + shell_quote(std::filesystem::absolute(a.recipe).string());
  for (const auto& s : a.sets) cmd += " --set " + shell_quote(s);
  // A trial run again (a retry, a resumed search) continues from its own checkpoints.
  cmd += " --set progress_bar=false --autoresume --run-dir " +
         shell_quote(std::filesystem::absolute(dir / "trials").string()) + "/\"$BATON_TRIAL_ID\"";
  options.command(cmd);
  options.env()["BATON_TRIAL_METRIC"] = a.metric;
  return options;
}

// --join: this worker takes trials from the queue it shares with the search's other workers.
std::shared_ptr<DistributedEngine> join_search(const SearchArgs& a, const std::shared_ptr<TrialStorage>& storage,
                                               const std::string& storage_url, const SearchWorker& w,
                                               const ProcessEngineOptions& options, const nlohmann::json& search_meta,
                                               std::size_t stored_trials) {
  DistributedOptions d;
  d.worker(w.name);
  d.limit(a.trials);
  d.heartbeat_s(a.heartbeat);
  d.stale_after_s(10 * a.heartbeat);
  d.on_dead_worker([](const std::string& dead) {
    const int n = kill_worker_processes(dead);
    std::printf("worker %s ended while running trials: they go back to the queue%s\n", dead.c_str(),
                n > 0 ? (", its " + std::to_string(n) + " trial process(es) stopped").c_str() : "");
    std::fflush(stdout);
  });
  if (!storage->meta("search")) storage->set_meta("search", search_meta);
  auto engine = std::make_shared<DistributedEngine>(storage, std::make_shared<ProcessEngine>(options), d);
  std::printf(
      "worker %s%s joins the search in %s (%zu trials there)\n", w.name.c_str(),
      w.rank ? (" (rank " + std::to_string(w.rank->first) + " of " + std::to_string(w.rank->second) + ")").c_str() : "",
      redact_storage_url(storage_url).c_str(), stored_trials);
  return engine;
}

// A search of its own: every change of a trial is stored; a resumed search's trials are loaded
// (the unfinished ones run again).
std::shared_ptr<ProcessEngine> own_search(const std::shared_ptr<TrialStorage>& storage, const std::string& storage_url,
                                          const SearchWorker& w, const ProcessEngineOptions& options,
                                          const nlohmann::json& search_meta, const std::vector<Trial>& previous) {
  auto engine = std::make_shared<ProcessEngine>(options);
  engine->set_observer([storage](const Trial& t) { storage->save_trial(t); });
  storage->set_meta("search", search_meta);
  storage->set_meta("worker", w.name);
  if (previous.empty()) return engine;
  nlohmann::json state = {{"trials", nlohmann::json::array()}};
  int unfinished = 0;
  for (const auto& t : previous) {
    state["trials"].push_back(t.to_json());
    unfinished += t.completed() ? 0 : 1;
  }
  std::printf("resuming: %zu trials in %s, %d unfinished (run again)\n", previous.size(),
              redact_storage_url(storage_url).c_str(), unfinished);
  engine->load_state_dict(state);
  return engine;
}

// The middlewares between the strategy and the engine, with the stoppers kept for their counts.
struct Middlewares {
  std::vector<std::shared_ptr<Middleware>> stack;
  std::shared_ptr<MedianStop> median;
  std::shared_ptr<Asha> halving;
};

Middlewares make_middlewares(const SearchArgs& a) {
  const bool maximize = a.direction == "maximize";
  Middlewares m;
  m.stack.push_back(std::make_shared<Deduplication>("replay"));
  if (a.retries > 0) m.stack.push_back(std::make_shared<FailureHandler>(a.retries));
  if (a.median_stop > 0) m.stack.push_back(m.median = std::make_shared<MedianStop>(maximize, a.median_stop));
  if (a.asha > 0) m.stack.push_back(m.halving = std::make_shared<Asha>(maximize, a.asha, 3, a.brackets));
  return m;
}

// The status line: trials done, running and failed, the best so far, elapsed time and ETA; redrawn
// in place on a terminal (at most 5 times a second), a line every 10 s in a log.
class StatusLine {
 public:
  StatusLine(Chain& chain, int64_t trials) : chain_(chain), trials_(trials) {}
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  bool tty() const { return tty_; }

  void print(const SearchProgress& p, bool force) {
    const double e = elapsed();
    if (!force && e - last_line_ < (tty_ ? 0.2 : 10.0)) return;
    last_line_ = e;
    int failed = 0, running = 0;
    for (const auto& t : chain_.list()) {
      failed += t.status == TrialStatus::kFailed ? 1 : 0;
      running += t.status == TrialStatus::kRunning ? 1 : 0;
    }
    std::ostringstream line;
    line << "trials " << p.completed << "/" << trials_ << " done, " << running << " running, " << failed << " failed";
    if (p.best)
      line << " | best " << *p.best->metrics.final << " (trial " << p.best->id << " " << p.best->parameters.dump()
           << ")";
    line << " | " << format_duration(e) << " elapsed";
    if (p.completed > 0 && p.completed < trials_)
      line << ", ETA "
           << format_duration(e / static_cast<double>(p.completed) * static_cast<double>(trials_ - p.completed));
    std::string text = line.str();
    if (tty_ && text.size() > 160) text = text.substr(0, 157) + "...";
    std::printf(tty_ ? "\r\033[K%s" : "%s\n", text.c_str());
    std::fflush(stdout);
  }

 private:
  Chain& chain_;
  int64_t trials_;
  bool tty_ = ::isatty(1);
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_line_ = -1e9;
};

// While the search runs: the status line is redrawn at each completion and once a second (so that
// elapsed time and the running count move while long trials run); after a signal, each tick ends
// what runs (its whole process group: SIGTERM, then SIGKILL). stop() (or the destructor) joins it.
class Ticker {
 public:
  Ticker(Chain& chain, StatusLine& status) : chain_(chain), status_(status), thread_([this] { loop(); }) {}
  ~Ticker() { stop(); }
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      finished_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void progress(const SearchProgress& p) {
    std::lock_guard lock(mutex_);
    last_ = p;
    status_.print(p, false);
  }
  // Read after stop().
  const SearchProgress& last() const { return last_; }
  const std::set<int64_t>& stopped() const { return stopped_; }  // running when a signal stopped the search

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::seconds(1), [&] { return finished_; })) {
      if (g_search_signal.load() != 0) {
        for (const auto& t : chain_.list()) {
          if (t.status == TrialStatus::kRunning && stopped_.insert(t.id).second) chain_.kill(t.id);
        }
      }
      status_.print(last_, false);
    }
  }
  Chain& chain_;
  StatusLine& status_;
  SearchProgress last_;
  std::set<int64_t> stopped_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool finished_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

// RUN_DIR/summary.json and the closing lines; returns the exit code.
int finish_search(const SearchArgs& a, Chain& chain, const std::optional<Trial>& best, const StatusLine& status,
                  const std::filesystem::path& dir, const std::string& storage_url, const SearchWorker& w,
                  const DistributedEngine* distributed, const Middlewares& m) {
  std::map<std::string, int> by_status;
  const auto all = chain.list();
  for (const auto& t : all) ++by_status[to_string(t.status)];
  nlohmann::json summary = {{"best", nullptr},
                            {"trials", {{"total", all.size()}, {"by_status", by_status}}},
                            {"wall_s", status.elapsed()},
                            {"direction", a.direction},
                            {"storage", redact_storage_url(storage_url)}};
  if (best) summary["best"] = {{"id", best->id}, {"value", *best->metrics.final}, {"parameters", best->parameters}};
  if (distributed) summary["worker"] = {{"name", w.name}, {"requeued_from_silent_workers", distributed->requeued()}};
  // Written whole then renamed: the workers of a shared search may write it at the same time.
  const auto tmp = dir / (std::string(RunDir::kSummary) + ".tmp." + std::to_string(::getpid()));
  std::ofstream(tmp) << summary.dump(2) << "\n";
  std::filesystem::rename(tmp, RunDir(dir).summary());
  for (const auto& t : all) {
    if (t.status == TrialStatus::kFailed)
      std::printf("trial %lld failed: %s\n", static_cast<long long>(t.id), t.error.substr(0, 300).c_str());
  }
  if (distributed && distributed->requeued() > 0)
    std::printf("this worker put %lld trial(s) of silent workers back in the queue\n",
                static_cast<long long>(distributed->requeued()));
  if (m.halving)
    std::printf("successive halving ended %lld trials early\n", static_cast<long long>(m.halving->kills()));
  if (m.median) std::printf("median stopping ended %lld trials early\n", static_cast<long long>(m.median->kills()));
  if (best) {
    std::printf("best: trial %lld, %s = %.6g, parameters %s\n", static_cast<long long>(best->id),
                a.recipe.empty() ? "value" : a.metric.c_str(), *best->metrics.final, best->parameters.dump().c_str());
  } else {
    std::printf("no trial finished with a value\n");
  }
  std::printf("summary: %s\n", RunDir(dir).summary().string().c_str());
  return best ? 0 : kRunFailed;
}

// The steps of `baton search`, each a function above: check, read the space, make the strategy,
// open the storage (resuming or joining), make the engine and middlewares, run, summarise. Long
// only by that sequence: each step is a call or two.
int run_search_command(const SearchArgs& a) {
  check_search_args(a);
  SearchWorker w;
  w.join = a.join || w.rank.has_value();
  nlohmann::json space_definition;
  const SearchSpace space = as_bad_input([&] {
    space_definition = SearchSpace::read_file(a.space);
    return SearchSpace::from_json(space_definition, a.space);
  });
  nlohmann::json settings = nlohmann::json::object();
  const std::unique_ptr<Strategy> strategy = make_search_strategy(a, space, w, settings);
  const std::filesystem::path dir = a.run_dir;
  std::filesystem::create_directories(dir);
  const std::string storage_url =
      a.storage.empty() ? "sqlite://" + std::filesystem::absolute(RunDir(dir).search_db()).string() : a.storage;
  if (a.new_study) start_new_study(dir, storage_url);
  const std::shared_ptr<TrialStorage> storage = as_bad_input([&] { return open_storage(storage_url); });
  std::vector<Trial> previous = storage->load_trials();
  if (!previous.empty() && !a.resume && !w.join) {
    throw BadInput(redact_storage_url(storage_url) + " already holds " + std::to_string(previous.size()) +
                   " trials; add --resume to continue that search, --join to work on it alongside its other "
                   "workers, or use another --run-dir/--storage");
  }
  if (!w.join && a.resume) prepare_resume(a, *storage, storage_url, space_definition, w, previous);

  const ProcessEngineOptions options = trial_options(a, dir, w.name);
  const nlohmann::json search_meta = {
      {"space", a.space},       {"space_definition", space_definition}, {"command", options.command()},
      {"strategy", a.strategy}, {"strategy_options", settings},         {"direction", a.direction},
      {"seed", a.seed}};
  std::shared_ptr<DistributedEngine> distributed;
  std::shared_ptr<ExecutionEngine> engine;
  if (w.join) {
    engine = distributed = join_search(a, storage, storage_url, w, options, search_meta, previous.size());
  } else {
    engine = own_search(storage, storage_url, w, options, search_meta, previous);
  }
  const Middlewares middlewares = make_middlewares(a);
  Chain chain(middlewares.stack);
  chain.set_engine(engine);

  StatusLine status(chain, a.trials);
  std::printf("baton search: %s, %lld trials, %d at once, strategy %s (%s), storage %s\n", a.space.c_str(),
              static_cast<long long>(a.trials), a.parallel, a.strategy.c_str(), a.direction.c_str(),
              redact_storage_url(storage_url).c_str());
  std::fflush(stdout);
  on_stop_signals(on_search_signal);
  std::optional<Trial> best;
  bool signalled = false;
  Ticker ticker(chain, status);  // stopped by its destructor when run_search throws
  try {
    best = run_search(*strategy, chain, a.trials, a.direction == "maximize", [&](const SearchProgress& p) {
      ticker.progress(p);
      if (g_search_signal.load() != 0) throw SearchStopped{};
    });
  } catch (const SearchStopped&) {
    signalled = true;
  }
  ticker.stop();
  if (signalled) return stop_search(chain, storage.get(), ticker.stopped(), w.join);
  status.print(ticker.last(), true);
  if (status.tty()) std::printf("\n");
  chain.shutdown();
  return finish_search(a, chain, best, status, dir, storage_url, w, distributed.get(), middlewares);
}

nlohmann::json trial_row(const Trial& t) {
  nlohmann::json inter = nlohmann::json::array();
  for (const auto& v : t.metrics.intermediate) inter.push_back({{"step", v.step}, {"value", v.value}});
  return {{"id", t.id},
          {"status", to_string(t.status)},
          {"parameters", t.parameters},
          {"final", t.metrics.final ? nlohmann::json(*t.metrics.final) : nlohmann::json()},
          {"intermediate", inter},
          {"worker", t.worker}};
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
  return as_bad_input([&] { return open_storage(url); });
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
  std::printf("%6s  %-11s  %12s  %6s  %s%s\n", "id", "status", "final", "steps", shared ? "worker              " : "",
              "parameters");
  for (const auto& t : trials) {
    const std::string fin = t.metrics.final ? std::to_string(*t.metrics.final) : "-";
    char worker[64] = "";
    if (shared) std::snprintf(worker, sizeof worker, "%-20s", t.worker.empty() ? "-" : t.worker.c_str());
    std::printf("%6lld  %-11s  %12s  %6zu  %s%s\n", static_cast<long long>(t.id), to_string(t.status).c_str(),
                fin.c_str(), t.metrics.intermediate.size(), worker, t.parameters.dump().c_str());
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
  auto a = std::make_shared<SearchArgs>();
  CLI::App* cmd = app.add_subcommand("search", "run a hyperparameter search: trials of a command or a recipe");
  cmd->add_option("space", a->space, "search space (NNI's format, YAML or JSON)")->required();
  cmd->add_option(
      "--command", a->command,
      "trial command (sh -c): parameters in $BATON_TRIAL_PARAMETERS, reports 'baton: {\"final\": v}' lines");
  cmd->add_option("--recipe", a->recipe, "each trial is `baton train RECIPE` with the parameters as --set overrides");
  cmd->add_option("--metric", a->metric, "with --recipe: the evaluation metric to optimise (default eval/accuracy)");
  cmd->add_option("--set", a->sets, "with --recipe: a fixed override for every trial (repeatable)");
  cmd->add_option("--trials", a->trials, "number of trials (default 10)");
  cmd->add_option("--parallel", a->parallel, "trials at once (default 1)");
  cmd->add_option("--strategy", a->strategy, "tpe (default), gp, random, grid or evolution");
  cmd->add_option("--strategy-option", a->strategy_options,
                  "KEY=VALUE: one of the strategy's options (repeatable; docs/search.md), e.g. candidates=48");
  cmd->add_option("--direction", a->direction, "maximize (default) or minimize");
  cmd->add_option("--seed", a->seed, "strategy seed (default 0)");
  cmd->add_option("--storage", a->storage,
                  "sqlite:///PATH.db (default RUN_DIR/search.db) or postgresql://USER@HOST:PORT/DATABASE");
  cmd->add_option("--run-dir", a->run_dir, "where trials' logs and summary.json go (default runs/search)");
  cmd->add_flag("--resume", a->resume,
                "continue the search in the storage: finished trials kept, unfinished run again");
  cmd->add_flag("--new-study", a->new_study,
                "start a new study where one is (a SQLite storage and its trials' folders are moved aside first)");
  cmd->add_flag("--join", a->join,
                "be one worker of a search shared through --storage (several processes or machines; implied under "
                "mpirun/srun): --trials counts the whole search");
  cmd->add_option("--heartbeat", a->heartbeat,
                  "with --join: seconds between a worker's heartbeats; a trial whose worker is silent 10 times that "
                  "long goes back to the queue (default 2)");
  cmd->add_option("--trial-timeout", a->trial_timeout, "seconds before a trial is stopped and counted failed");
  cmd->add_option("--retries", a->retries, "run a failed trial again up to N times (default 0)");
  cmd->add_option("--asha", a->asha,
                  "asynchronous successive halving: rungs at steps N, 3N, 9N...; a trial not in the best third of "
                  "the values at a rung is stopped (default 0: off)");
  cmd->add_option("--brackets", a->brackets,
                  "with --asha: asynchronous Hyperband, K brackets; bracket b has its rungs at N*3^b, 3N*3^b... "
                  "(trials take brackets in turn; default 1: plain ASHA)");
  cmd->add_option("--median-stop", a->median_stop,
                  "stop a trial whose best intermediate value is worse than the median of completed trials at the "
                  "same step, once N trials completed (default 0: off)");
  cmd->callback([a] { guarded([&] { return run_search_command(*a); }); });

  auto storage = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto id = std::make_shared<int64_t>(0);
  CLI::App* trials = app.add_subcommand("trials", "list or show the trials of a search");
  trials->require_subcommand(1);
  CLI::App* ls = trials->add_subcommand("ls", "list the trials in a storage");
  ls->add_option("--storage", *storage, "the search's storage (sqlite:///PATH.db or PATH.db)")->required();
  ls->add_flag("--json", *json, "one JSON array: [{id, status, parameters, final, intermediate}]");
  ls->callback([storage, json] { guarded([&] { return run_trials_ls(*storage, *json); }); });
  CLI::App* show = trials->add_subcommand("show", "one trial in full");
  show->add_option("id", *id, "trial id")->required();
  show->add_option("--storage", *storage, "the search's storage")->required();
  show->callback([storage, id] { guarded([&] { return run_trials_show(*storage, *id); }); });
}

}  // namespace baton::cli
