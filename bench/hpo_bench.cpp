// Time per trial and best value of baton's strategies through the in-process engine, on the same
// test functions as ../shared/peers/optuna_bench.py; prints one JSON line like it.
//
//   build/bin/hpo_bench --function hartmann6 --trials 1000 --seed 0 [--strategy tpe|random|grid]
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <fcntl.h>

#include <nlohmann/json.hpp>

#include "baton/exec/engine.h"
#include "baton/exec/distributed.h"
#include "baton/exec/process.h"
#include "baton/exec/storage.h"
#include "baton/exec/space.h"
#include "baton/exec/tpe.h"

namespace {

const double kA[4][6] = {{10, 3, 17, 3.5, 1.7, 8}, {0.05, 10, 17, 0.1, 8, 14}, {3, 3.5, 1.7, 10, 17, 8}, {17, 8, 0.05, 10, 0.1, 14}};
const double kP[4][6] = {{.1312, .1696, .5569, .0124, .8283, .5886}, {.2329, .4135, .8307, .3736, .1004, .9991},
                         {.2348, .1451, .3522, .2883, .3047, .6650}, {.4047, .8828, .8732, .5743, .1091, .0381}};
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

double branin(const nlohmann::json& p) {
  const double x1 = p["x1"].get<double>(), x2 = p["x2"].get<double>();
  const double a = x2 - 5.1 / (4 * M_PI * M_PI) * x1 * x1 + 5 / M_PI * x1 - 6;
  return a * a + 10 * (1 - 1 / (8 * M_PI)) * std::cos(x1) + 10;
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
  std::cerr << "hpo_bench: " << why
            << "\nusage: hpo_bench [--function hartmann6|branin|trivial] [--trials N] [--seed S] [--strategy tpe|random|grid]\n"
            << "       [--engine inprocess|process|shared]  (process: each trial a command printing a trivial final value;\n"
            << "        shared: the same through a DistributedEngine over --storage URL, default a new SQLite file)\n"
            << "       [--storage URL]\n"
            << "       [--multivariate 0|1] [--candidates N] [--max-rest N]   (tpe)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string function = "hartmann6", strategy_name = "tpe", engine_name = "inprocess", storage_url;
  int64_t trials = 200;
  uint64_t seed = 0;
  baton::TpeOptions tpe;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage("'" + a + "' needs a value");
    const std::string v = argv[++i];
    try {
      if (a == "--function") function = v;
      else if (a == "--trials") trials = std::stoll(v);
      else if (a == "--seed") seed = std::stoull(v);
      else if (a == "--strategy" || a == "--sampler") strategy_name = v;
      else if (a == "--engine") engine_name = v;
      else if (a == "--storage") storage_url = v;
      else if (a == "--multivariate") tpe.multivariate = v != "0" && v != "false";
      else if (a == "--candidates") tpe.candidates = std::stoi(v);
      else if (a == "--max-rest") tpe.max_rest = std::stoi(v);
      else return usage("unknown option '" + a + "'");
    } catch (const std::exception&) {
      return usage("'" + a + "' needs a number, got '" + v + "'");
    }
  }
  nlohmann::json space;
  double optimum = 0;
  std::function<double(const nlohmann::json&)> objective;
  if (function == "hartmann6") {
    for (int j = 0; j < 6; ++j) space["x" + std::to_string(j)] = {{"_type", "uniform"}, {"_value", {0.0, 1.0}}};
    objective = hartmann6;
    optimum = -3.32237;
  } else if (function == "branin") {
    space["x1"] = {{"_type", "uniform"}, {"_value", {-5.0, 10.0}}};
    space["x2"] = {{"_type", "uniform"}, {"_value", {0.0, 15.0}}};
    objective = branin;
    optimum = 0.397887;
  } else if (function == "trivial") {
    space["x"] = {{"_type", "uniform"}, {"_value", {0.0, 1.0}}};
    objective = [](const nlohmann::json& p) { return p["x"].get<double>(); };
  } else {
    return usage("unknown function '" + function + "'");
  }
  try {
    const auto s = baton::SearchSpace::from_json(space);
    std::unique_ptr<baton::Strategy> strategy;
    if (strategy_name == "tpe") {
      tpe.seed = seed;
      tpe.maximize = false;
      strategy = std::make_unique<baton::TpeStrategy>(s, tpe);
    } else {
      strategy = baton::make_strategy(strategy_name, s, {.seed = seed, .maximize = false});
    }
    std::unique_ptr<baton::ExecutionEngine> engine;
    const std::string command = "echo 'baton: {\"final\": 0.5}'";
    if (engine_name == "inprocess") {
      engine = std::make_unique<baton::SequentialEngine>(
          [&](baton::TrialContext& t) { t.report_final(objective(t.parameters())); });
    } else if (engine_name == "process") {
      engine = std::make_unique<baton::ProcessEngine>(baton::ProcessEngineOptions{.command = command});
    } else if (engine_name == "shared") {
      if (storage_url.empty()) {
        const auto path = std::filesystem::temp_directory_path() / ("hpo_bench_" + std::to_string(::getpid()) + ".db");
        std::filesystem::remove(path);
        storage_url = "sqlite://" + path.string();
      }
      std::shared_ptr<baton::TrialStorage> storage = baton::open_storage(storage_url);
      if (!storage->states().empty()) throw std::runtime_error(storage_url + " is not empty");
      auto local = std::make_shared<baton::ProcessEngine>(baton::ProcessEngineOptions{.command = command});
      engine = std::make_unique<baton::DistributedEngine>(storage, local, baton::DistributedOptions{.limit = trials});
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
                          {"optimum", optimum},
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
