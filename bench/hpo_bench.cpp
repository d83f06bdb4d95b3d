// Time per trial and best value of baton's strategies through the in-process engine, on the same
// test functions as bench/peers/optuna_bench.py; prints one JSON line like it.
//
//   build/bin/hpo_bench --function hartmann6 --trials 1000 --seed 0 [--strategy tpe|random|grid|gp]
//   build/bin/hpo_bench --function mixed --trials 60 --seeds 20 [--parallel 4]
//   build/bin/hpo_bench --function table:bench/nas_table.csv --trials 100 --seeds 50 --strategy regularized_evolution
//       a benchmark table's configurations, its first metric maximized (the values printed negated)
//       seeds 0..19 (from --seed S: S..S+19), one line each, then {"median": .., "worst": ..}:
//       the strategy alone, trials evaluated in the order they were suggested, `parallel` of them
//       suggested before the oldest one's value is known (workers of equal speed)
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>

#include <fcntl.h>

#include <nlohmann/json.hpp>

#include "baton/exec/distributed.h"
#include "baton/exec/engine.h"
#include "baton/exec/pareto.h"
#include "baton/exec/process.h"
#include "baton/exec/search.h"
#include "baton/exec/storage.h"
#include "baton/exec/table.h"
#include "baton/exec/tpe.h"

namespace {

const double kA[4][6] = {
    {10, 3, 17, 3.5, 1.7, 8}, {0.05, 10, 17, 0.1, 8, 14}, {3, 3.5, 1.7, 10, 17, 8}, {17, 8, 0.05, 10, 0.1, 14}};
const double kP[4][6] = {{.1312, .1696, .5569, .0124, .8283, .5886},
                         {.2329, .4135, .8307, .3736, .1004, .9991},
                         {.2348, .1451, .3522, .2883, .3047, .6650},
                         {.4047, .8828, .8732, .5743, .1091, .0381}};
const double kAlpha[4] = {1.0, 1.2, 3.0, 3.2};

double hartmann6(const nlohmann::json& p) {
  double total = 0;
  for (int i = 0; i < 4; ++i) {
    double s = 0;
    for (int j = 0; j < 6; ++j) {
      const double d = p["x" + std::to_string(j)].get<double>() - kP[i][j];
      s += kA[i][j] * d * d;
    }
    total -= kAlpha[i] * std::exp(-s);
  }
  return total;
}

// A training-like space (the same function as bench/peers/optuna_bench.py's `mixed`): a
// log-uniform learning rate, an integer, a choice with a nested parameter under one branch, a
// quantized value. Minimum 0 (adam, lr 10^-3.5, 3 layers, dropout 0.2); the sgd branch's best is 0.1.
const char* kMixedSpace = R"({
  "lr": {"_type": "loguniform", "_value": [1e-5, 0.1]},
  "layers": {"_type": "randint", "_value": [1, 6]},
  "optimizer": {"_type": "choice", "_value": [{"_name": "sgd", "momentum": {"_type": "uniform", "_value": [0, 0.99]}},
                                               {"_name": "adam"}]},
  "dropout": {"_type": "quniform", "_value": [0, 0.5, 0.05]}
})";

double mixed(const nlohmann::json& p) {
  const double a = std::log10(p["lr"].get<double>());
  const auto& optimizer = p["optimizer"];
  double value = 0;
  if (optimizer["_name"] == "sgd") {
    const double m = optimizer["momentum"].get<double>();
    value = 0.1 + (a + 2.0) * (a + 2.0) + 4.0 * (m - 0.9) * (m - 0.9);
  } else {
    value = (a + 3.5) * (a + 3.5);
  }
  const double layers = p["layers"].get<double>(), dropout = p["dropout"].get<double>();
  return value + 0.05 * (layers - 3) * (layers - 3) + 4.0 * (dropout - 0.2) * (dropout - 0.2);
}

double branin(const nlohmann::json& p) {
  const double x1 = p["x1"].get<double>(), x2 = p["x2"].get<double>();
  const double a = x2 - 5.1 / (4 * M_PI * M_PI) * x1 * x1 + 5 / M_PI * x1 - 6;
  return a * a + 10 * (1 - 1 / (8 * M_PI)) * std::cos(x1) + 10;
}

// Several objectives, all minimized (Zitzler, Deb and Thiele 2000; Deb et al. 2002): ZDT1-3 over 30
// variables in [0, 1], DTLZ2 with 3 objectives over 12. Their fronts: ZDT1 f2 = 1 - sqrt(f1), ZDT2
// f2 = 1 - f1^2, ZDT3 five disconnected pieces, DTLZ2 the unit sphere's positive octant.
std::vector<double> zdt(const nlohmann::json& p, int which) {
  const int n = 30;
  const double f1 = p["x0"].get<double>();
  double sum = 0;
  for (int j = 1; j < n; ++j) sum += p["x" + std::to_string(j)].get<double>();
  const double g = 1.0 + 9.0 * sum / (n - 1), r = f1 / g;
  double h = 1.0 - std::sqrt(r);
  if (which == 2) h = 1.0 - r * r;
  if (which == 3) h = 1.0 - std::sqrt(r) - r * std::sin(10.0 * M_PI * f1);
  return {f1, g * h};
}

std::vector<double> dtlz2(const nlohmann::json& p) {
  const int n = 12, m = 3;
  double g = 0;
  for (int j = m - 1; j < n; ++j) g += std::pow(p["x" + std::to_string(j)].get<double>() - 0.5, 2);
  const double a = p["x0"].get<double>() * M_PI / 2, b = p["x1"].get<double>() * M_PI / 2;
  return {(1 + g) * std::cos(a) * std::cos(b), (1 + g) * std::cos(a) * std::sin(b), (1 + g) * std::sin(a)};
}

// The command's own cost: run it n times in a row with posix_spawn + waitpid, output discarded.
double bare_command_s(const std::string& command, int64_t n) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  std::string sh = "/bin/sh", c = "-c", cmd = command;
  char* argv[] = {sh.data(), c.data(), cmd.data(), nullptr};
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    pid_t pid = -1;
    if (posix_spawn(&pid, "/bin/sh", &actions, nullptr, argv, environ) != 0) return NAN;
    int status = 0;
    waitpid(pid, &status, 0);
  }
  posix_spawn_file_actions_destroy(&actions);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int usage(const std::string& why) {
  std::cerr
      << "hpo_bench: " << why
      << "\nusage: hpo_bench [--function hartmann6|hartmann6_10d|hartmann6_noisy|branin|mixed|edge|trivial\n"
         "                            "
         "|branin_constrained|hartmann6_constrained|sphere|rosenbrock|zdt1|zdt2|zdt3|dtlz2|table:FILE]\n"
         "       (sphere, rosenbrock: 10-d; zdt1-3, dtlz2: several objectives, the hypervolume; table:FILE: a\n"
         "        benchmark table's first metric, maximized)\n"
         "       [--trials N] [--seed S] [--seeds N]\n"
      << "       [--strategy tpe|gp|random|grid|evolution|regularized_evolution|nsga2|motpe|cmaes] [--parallel N] "
         "(with --seeds)\n"
      << "       [--engine inprocess|process|shared]  (process: each trial a command printing a trivial final value;\n"
      << "        shared: the same through a DistributedEngine over --storage URL, default a new SQLite file)\n"
      << "       [--storage URL]\n"
      << "       [--option KEY=VALUE]...  (the strategy's options, as baton search --strategy-option)\n";
  return 2;
}

struct Problem {
  nlohmann::json space;
  std::function<double(const nlohmann::json&)> objective;
  double optimum = 0;
  double noise = 0;  // the sd of the Gaussian noise a trial's value carries (the objective is its mean)
  // Several objectives (minimized): their values, and the fixed reference point of the hypervolume.
  std::function<std::vector<double>(const nlohmann::json&)> objectives{};
  std::vector<double> reference{};
  // Constraints: the constrained metric's value of a point, and its bound (value <= bound).
  std::function<double(const nlohmann::json&)> constrained{};
  double bound = 0;
};

std::optional<Problem> problem(const std::string& function) {
  Problem p;
  if (function.rfind("table:", 0) == 0) {  // a benchmark table's first metric, maximized (negated here)
    const auto table = std::make_shared<baton::BenchmarkTable>(baton::BenchmarkTable::read_csv(function.substr(6)));
    const std::string metric = table->metrics().front();
    p.space = table->space();
    p.objective = [table, metric](const nlohmann::json& x) { return -table->value(x, metric); };
    p.optimum = INFINITY;
    for (const auto& [configuration, value] : table->finals(metric)) p.optimum = std::min(p.optimum, -value);
    return p;
  }
  if (function == "hartmann6" || function == "hartmann6_10d" || function == "hartmann6_noisy") {
    const int n = function == "hartmann6_10d" ? 10 : 6;  // 10d: x6..x9 do nothing (to be found out)
    if (function == "hartmann6_noisy") p.noise = 0.1;    // as a training's metric: the best is the luckiest
    for (int j = 0; j < n; ++j) p.space["x" + std::to_string(j)] = {{"_type", "uniform"}, {"_value", {0.0, 1.0}}};
    p.objective = hartmann6;
    p.optimum = -3.32237;
  } else if (function == "branin_constrained") {  // within 50 of (2.5, 7.5): one of the 3 minima is feasible
    p.space["x1"] = {{"_type", "uniform"}, {"_value", {-5.0, 10.0}}};
    p.space["x2"] = {{"_type", "uniform"}, {"_value", {0.0, 15.0}}};
    p.objective = branin;
    p.constrained = [](const nlohmann::json& x) {
      return std::pow(x["x1"].get<double>() - 2.5, 2) + std::pow(x["x2"].get<double>() - 7.5, 2);
    };
    p.bound = 50;
    p.optimum = 0.397887;
  } else if (function == "hartmann6_constrained") {  // BoTorch's: |x|^2 <= 1 (the optimum is feasible)
    for (int j = 0; j < 6; ++j) p.space["x" + std::to_string(j)] = {{"_type", "uniform"}, {"_value", {0.0, 1.0}}};
    p.objective = hartmann6;
    p.constrained = [](const nlohmann::json& x) {
      double v = 0;
      for (int j = 0; j < 6; ++j) v += std::pow(x["x" + std::to_string(j)].get<double>(), 2);
      return v;
    };
    p.bound = 1;
    p.optimum = -3.32237;
  } else if (function == "branin") {
    p.space["x1"] = {{"_type", "uniform"}, {"_value", {-5.0, 10.0}}};
    p.space["x2"] = {{"_type", "uniform"}, {"_value", {0.0, 15.0}}};
    p.objective = branin;
    p.optimum = 0.397887;
  } else if (function == "mixed") {
    p.space = nlohmann::json::parse(kMixedSpace);
    p.objective = mixed;
  } else if (function == "edge") {  // a bowl whose lowest point lies on two faces of the box
    for (int j = 0; j < 4; ++j) p.space["x" + std::to_string(j)] = {{"_type", "uniform"}, {"_value", {0.0, 1.0}}};
    p.objective = [](const nlohmann::json& x) {
      const double c[4] = {-0.2, 1.3, 0.5, 0.3};
      double v = 0;
      for (int j = 0; j < 4; ++j) v += std::pow(x["x" + std::to_string(j)].get<double>() - c[j], 2);
      return v;
    };
    p.optimum = 0.13;
  } else if (function == "sphere" || function == "rosenbrock") {  // 10-d; minimum 0 (sphere at 0.3, rosenbrock at 1)
    const bool sphere = function == "sphere";
    for (int j = 0; j < 10; ++j)
      p.space["x" + std::to_string(j)] = {{"_type", "uniform"},
                                          {"_value", sphere ? nlohmann::json{-5.0, 5.0} : nlohmann::json{-2.0, 2.0}}};
    p.objective = [sphere](const nlohmann::json& x) {
      double v = 0;
      for (int j = 0; j < 10; ++j) {
        const double a = x["x" + std::to_string(j)].get<double>();
        if (sphere) {
          v += (a - 0.3) * (a - 0.3);
        } else if (j < 9) {
          const double b = x["x" + std::to_string(j + 1)].get<double>();
          v += 100 * (b - a * a) * (b - a * a) + (1 - a) * (1 - a);
        }
      }
      return v;
    };
  } else if (function == "zdt1" || function == "zdt2" || function == "zdt3") {
    for (int j = 0; j < 30; ++j) p.space["x" + std::to_string(j)] = {{"_type", "uniform"}, {"_value", {0.0, 1.0}}};
    const int which = function[3] - '0';
    p.objectives = [which](const nlohmann::json& x) { return zdt(x, which); };
    p.reference = {1.1, 11.0};  // f1 <= 1 and f2 <= g + f1 <= 11: every trial counts
  } else if (function == "dtlz2") {
    for (int j = 0; j < 12; ++j) p.space["x" + std::to_string(j)] = {{"_type", "uniform"}, {"_value", {0.0, 1.0}}};
    p.objectives = dtlz2;
    p.reference = {2.5, 2.5, 2.5};
  } else if (function == "trivial") {
    p.space["x"] = {{"_type", "uniform"}, {"_value", {0.0, 1.0}}};
    p.objective = [](const nlohmann::json& x) { return x["x"].get<double>(); };
  } else {
    return std::nullopt;
  }
  return p;
}

// This process's CPU time: a suggestion's cost on a machine busy with other work.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The strategy alone: `parallel` suggestions out at a time, the oldest evaluated next. Returns the
// best value, the slowest suggestion's time, and the best after 30, 60 and 100 trials.
struct Outcome {
  double best = INFINITY, slowest_s = 0, last10_s = 0;  // last10: the last 10 suggestions' time
  nlohmann::json best_at = nlohmann::json::object();
  std::vector<std::vector<double>> points{};  // several objectives: every trial's values
};
// With noise, the best is the true value of the trial that looked best (what a user would pick).
Outcome best_of(baton::Strategy& strategy, const Problem& p, int64_t trials, int parallel, uint64_t seed) {
  Outcome o;
  std::mt19937_64 rng(seed ^ 0x6e6f697365ULL);
  std::normal_distribution<double> noise(0.0, p.noise > 0 ? p.noise : 1.0);
  double observed_best = INFINITY;
  std::deque<std::pair<int64_t, nlohmann::json>> out;
  int64_t next_id = 1;
  for (int64_t done = 0; done < trials; ++done) {
    while (static_cast<int64_t>(out.size()) < parallel && next_id <= trials) {
      const double t0 = cpu_seconds();
      auto parameters = strategy.suggest();
      const double took = cpu_seconds() - t0;
      o.slowest_s = std::max(o.slowest_s, took);
      if (next_id > trials - 10) o.last10_s += took;
      if (!parameters) break;
      out.emplace_back(next_id++, *parameters);
    }
    if (out.empty()) break;
    baton::Trial t;
    t.id = out.front().first;
    t.parameters = out.front().second;
    out.pop_front();
    t.status = baton::TrialStatus::kTrained;
    if (p.objectives) {
      t.metrics.values = p.objectives(t.parameters);
      t.metrics.final = t.metrics.values.front();
      o.points.push_back(t.metrics.values);
      const int64_t n = done + 1;
      if (n == 100 || n == 300 || n == 1000 || n == trials)
        o.best_at[std::to_string(n)] = baton::hypervolume(o.points, p.reference);
      strategy.observe(t);
      continue;
    }
    const double value = p.objective(t.parameters);
    t.metrics.final = value + (p.noise > 0 ? noise(rng) : 0.0);
    bool feasible = true;
    if (p.constrained) {  // the best is the best feasible
      t.metrics.constraints = {p.constrained(t.parameters)};
      feasible = t.metrics.constraints[0] <= p.bound;
    }
    if (feasible && *t.metrics.final < observed_best) observed_best = *t.metrics.final, o.best = value;
    if (const int64_t n = done + 1;
        n == 10 || n == 20 || n == 30 || n == 50 || n == 60 || n == 100 || n == 150 || n == 200)
      o.best_at[std::to_string(n)] = o.best;
    strategy.observe(t);
  }
  return o;
}

// --seeds: one line per seed, then the median and the worst of the best values.
int quality(const std::function<std::unique_ptr<baton::Strategy>(uint64_t)>& make, const Problem& p,
            const std::string& strategy_name, const std::string& function, int64_t trials, uint64_t first_seed,
            int seeds, int parallel) {
  std::vector<double> bests;
  double slowest = 0, last10 = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < seeds; ++s) {
    const uint64_t seed = first_seed + static_cast<uint64_t>(s);
    auto strategy = make(seed);
    const Outcome o = best_of(*strategy, p, trials, parallel, seed);
    slowest = std::max(slowest, o.slowest_s);
    last10 += o.last10_s;
    // Several objectives: the hypervolume, larger is better (negated so that the order is the same).
    const double hv = p.objectives ? baton::hypervolume(o.points, p.reference) : NAN;
    bests.push_back(p.objectives ? -hv : o.best);
    nlohmann::json line = {{"peer", "baton"}, {"sampler", strategy_name}, {"function", function}, {"trials", trials},
                           {"seed", seed},    {"parallel", parallel}};
    if (p.objectives) {
      line["hypervolume"] = hv;
      line["hypervolume_at"] = o.best_at;
    } else {
      line["best"] = o.best;
      line["best_at"] = o.best_at;
    }
    std::cout << line.dump() << "\n";
  }
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::sort(bests.begin(), bests.end());
  const std::size_t n = bests.size();
  const double median = n % 2 == 1 ? bests[n / 2] : 0.5 * (bests[n / 2 - 1] + bests[n / 2]);
  nlohmann::json summary = {{"peer", "baton"},
                            {"sampler", strategy_name},
                            {"function", function},
                            {"trials", trials},
                            {"seeds", seeds},
                            {"parallel", parallel},
                            {"median", median},
                            {"worst", bests.back()},
                            {"optimum", p.optimum},
                            {"ms_per_trial", dt / static_cast<double>(trials * seeds) * 1e3},
                            {"slowest_suggestion_cpu_ms", slowest * 1e3},
                            {"last_suggestions_cpu_ms", last10 / (10.0 * seeds) * 1e3}};
  if (p.objectives) {  // the hypervolume's median and worst (the smallest), with its reference point
    summary.erase("optimum");
    summary["median"] = -median;
    summary["worst"] = -bests.back();
    summary["hypervolume"] = -median;
    summary["reference"] = p.reference;
  }
  std::cout << summary.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string function = "hartmann6", strategy_name = "tpe", engine_name = "inprocess", storage_url;
  int64_t trials = 200;
  uint64_t seed = 0;
  int seeds = 0, parallel = 1;
  nlohmann::json settings = nlohmann::json::object();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage("'" + a + "' needs a value");
    const std::string v = argv[++i];
    try {
      if (a == "--function")
        function = v;
      else if (a == "--trials")
        trials = std::stoll(v);
      else if (a == "--seed")
        seed = std::stoull(v);
      else if (a == "--seeds")
        seeds = std::stoi(v);
      else if (a == "--parallel")
        parallel = std::stoi(v);
      else if (a == "--strategy" || a == "--sampler")
        strategy_name = v;
      else if (a == "--engine")
        engine_name = v;
      else if (a == "--storage")
        storage_url = v;
      else if (a == "--option")
        baton::add_strategy_setting(settings, v);
      else
        return usage("unknown option '" + a + "'");
    } catch (const std::exception& e) {
      return usage(a == "--option" ? e.what() : "'" + a + "' needs a number, got '" + v + "'");
    }
  }
  std::optional<Problem> p;
  try {
    p = problem(function);
  } catch (const std::exception& e) {  // a table that cannot be read
    std::cerr << "hpo_bench: " << e.what() << "\n";
    return 2;
  }
  if (!p) return usage("unknown function '" + function + "'");
  if (parallel < 1) return usage("--parallel needs a number >= 1");
  try {
    const auto s = baton::SearchSpace::from_json(p->space);
    auto make = [&](uint64_t with_seed) -> std::unique_ptr<baton::Strategy> {
      const std::vector<bool> directions(p->objectives ? p->reference.size() : 0, false);
      std::vector<baton::Constraint> constraints;
      if (p->constrained) constraints.push_back({"c", true, p->bound});
      return baton::make_strategy(strategy_name, s,
                                  baton::StrategyOptions()
                                      .seed(with_seed)
                                      .maximize(false)
                                      .directions(directions)
                                      .constraints(constraints)
                                      .settings(settings));
    };
    if (seeds > 0 || p->objectives || p->constrained)  // the strategy alone, as with --seeds
      return quality(make, *p, strategy_name, function, trials, seed, std::max(seeds, 1), parallel);
    auto strategy = make(seed);
    std::unique_ptr<baton::ExecutionEngine> engine;
    const std::string command = "echo 'baton: {\"final\": 0.5}'";
    if (engine_name == "inprocess") {
      engine = std::make_unique<baton::SequentialEngine>(
          [&](baton::TrialContext& t) { t.report_final(p->objective(t.parameters())); });
    } else if (engine_name == "process") {
      engine = std::make_unique<baton::ProcessEngine>(baton::ProcessEngineOptions().command(command));
    } else if (engine_name == "shared") {
      if (storage_url.empty()) {
        const auto path = std::filesystem::temp_directory_path() / ("hpo_bench_" + std::to_string(::getpid()) + ".db");
        std::filesystem::remove(path);
        storage_url = "sqlite://" + path.string();
      }
      std::shared_ptr<baton::TrialStorage> storage = baton::open_storage(storage_url);
      if (!storage->states().empty()) throw std::runtime_error(storage_url + " is not empty");
      auto local = std::make_shared<baton::ProcessEngine>(baton::ProcessEngineOptions().command(command));
      engine = std::make_unique<baton::DistributedEngine>(storage, local, baton::DistributedOptions().limit(trials));
    } else {
      return usage("unknown engine '" + engine_name + "'");
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto best = baton::run_search(*strategy, *engine, trials, /*maximize=*/false);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    engine->shutdown();
    nlohmann::json out = {{"peer", "baton"},
                          {"sampler", strategy_name},
                          {"function", function},
                          {"trials", trials},
                          {"seed", seed},
                          {"total_s", dt},
                          {"ms_per_trial", dt / static_cast<double>(trials) * 1e3},
                          {"best", best ? *best->metrics.final : NAN},
                          {"optimum", p->optimum},
                          {"engine", engine_name}};
    if (engine_name == "process" || engine_name == "shared") {
      const double bare = bare_command_s(command, trials);
      out["command_ms"] = bare / static_cast<double>(trials) * 1e3;
      out["overhead_ms"] = (dt - bare) / static_cast<double>(trials) * 1e3;
    }
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "hpo_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
