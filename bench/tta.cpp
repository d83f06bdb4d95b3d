// Time to accuracy on Fashion-MNIST: baton's recipes against the peer (PyTorch eager from Python,
// bench/peers/pytorch_fashion.py --tuned) in the same run. Train time only (evaluation
// excluded), until test accuracy >= 0.91, evaluated at least every 12,800 training samples.
//
//   build/bin/tta [--seeds 3] [--peer-runs 1] [--no-peer] [--full] [--ablate] [--add NAME[={options}]]...
//                 [--set key=value]...
//
// Rows: the peer; recipes/fashion_mnist.yaml (the peer's recipe) with a threshold stopper and an
// evaluation every 100 batches; recipes/fashion_mnist_fast.yaml (its own stopper). --full also runs
// the fast recipe without its stopper to the end (seed 0) and reports the final accuracy.
// --ablate runs the fast recipe once without each of its algorithms (same seeds): the marginal
// effect table of bench/README.md; --add runs it once with each named algorithm added (its options
// as YAML: --add 'mixup={alpha: 0.1}'). The last line is JSON.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "baton/train/recipe.h"
#include "baton/train/trainer.h"

namespace {

struct Result {
  double train_s = 0;  // to the target when reached, else the whole run
  bool reached = false;
  double final_accuracy = 0;
  int64_t steps = 0;
  double samples_per_s = 0;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

Result run_recipe(const std::string& path, std::vector<std::string> sets) {
  sets.emplace_back("progress_bar=false");
  sets.emplace_back("save_interval=100000ep");
  baton::TrainingRun run = baton::build_run(baton::Recipe::load(path, sets));
  run.options.console_log_interval("0ep");
  baton::Trainer trainer(run.options);
  trainer.fit();
  Result r;
  const baton::RunSummary& s = trainer.summary();
  r.train_s = s.train_s;
  r.steps = s.steps;
  r.samples_per_s = s.samples_per_s();
  r.final_accuracy =
      trainer.state().eval_metrics.count("eval") ? trainer.state().eval_metrics.at("eval").at("accuracy") : 0;
  r.reached = r.final_accuracy >= 0.91;
  return r;
}

Result run_peer(const std::string& script, int seed) {
  const std::string command = "/usr/bin/python3 " + script + " --epochs 3 --target 0.91 --tuned --seed " +
                              std::to_string(seed) + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  Result r;
  if (!pipe) return r;
  std::array<char, 4096> line{};
  std::string last;
  while (fgets(line.data(), line.size(), pipe.get()) != nullptr) last = line.data();
  try {
    const auto j = nlohmann::json::parse(last);
    r.reached = !j["time_to_target_s"].is_null();
    r.train_s = r.reached ? j["time_to_target_s"].get<double>() : j["train_s"].get<double>();
    r.final_accuracy = j["final_test_acc"].get<double>();
    r.steps = j["steps"].get<int64_t>();
    r.samples_per_s = j["samples_per_s"].get<double>();
  } catch (const std::exception&) {
    std::fprintf(stderr, "tta: the peer printed no summary (is python3-torch installed?)\n");
  }
  return r;
}

void print(const std::string& label, const Result& r) {
  std::printf("  %-44s %s %6.1f s  steps %5lld  %6.0f samples/s  final acc %.4f\n", label.c_str(),
              r.reached ? "to 91%" : "no 91%", r.train_s, static_cast<long long>(r.steps), r.samples_per_s,
              r.final_accuracy);
  std::fflush(stdout);
}

// A markdown table of median times to 91% against the recipe's (1e9: not reached).
void print_table(const char* column, const char* base_row, double base_s,
                 const std::vector<std::pair<std::string, double>>& rows) {
  std::printf("\n| %s | median time to 91%% | change |\n|---|---|---|\n| %s | %.1f s | |\n", column, base_row, base_s);
  for (const auto& [name, s] : rows) {
    if (s >= 1e9) {
      std::printf("| %s | not reached | |\n", name.c_str());
    } else {
      std::printf("| %s | %.1f s | %+.1f s |\n", name.c_str(), s, s - base_s);
    }
  }
}

struct Row {
  std::string name;
  std::vector<double> times;
  int reached = 0;
  double final_accuracy = 0;
};

}  // namespace

int main(int argc, char** argv) {
  int seeds = 3;
  int peer_runs = 1;
  bool peer = true;
  bool full = false;
  bool ablate = false;
  std::vector<std::string> sets;
  std::vector<std::string> add;  // "name" or "name={options}": the recipe plus this algorithm
  const std::filesystem::path root = std::filesystem::path(BATON_SOURCE_DIR);
  std::string peer_script = (root / "bench/peers/pytorch_fashion.py").string();
  if (const char* p = std::getenv("PEER")) peer_script = p;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seeds" && i + 1 < argc) {
      seeds = std::atoi(argv[++i]);
    } else if (a == "--peer-runs" && i + 1 < argc) {
      peer_runs = std::atoi(argv[++i]);
    } else if (a == "--no-peer") {
      peer = false;
    } else if (a == "--full") {
      full = true;
    } else if (a == "--ablate") {
      ablate = true;
    } else if (a == "--add" && i + 1 < argc) {
      add.emplace_back(argv[++i]);
    } else if (a == "--set" && i + 1 < argc) {
      sets.emplace_back(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: tta [--seeds N] [--peer-runs N] [--no-peer] [--full] [--ablate] [--add NAME[=OPTIONS]]... "
                   "[--set key=value]...\n");
      return 2;
    }
  }
  const std::string baseline = (root / "recipes/fashion_mnist.yaml").string();
  const std::string fast = (root / "recipes/fashion_mnist_fast.yaml").string();
  nlohmann::json out;
  try {
    std::vector<Row> rows;
    auto collect = [&](const std::string& name, const std::function<Result(int)>& one, int runs) {
      Row row{name, {}, 0, 0};
      std::vector<double> finals;
      for (int s = 0; s < runs; ++s) {
        const Result r = one(s);
        print(name + " seed " + std::to_string(s), r);
        row.times.push_back(r.reached ? r.train_s : 1e9);
        row.reached += r.reached ? 1 : 0;
        finals.push_back(r.final_accuracy);
      }
      row.final_accuracy = median(finals);
      rows.push_back(row);
      return median(row.times);
    };
    std::printf("time to 91%% test accuracy (train time, evaluation excluded), %d seeds\n", seeds);
    double peer_s = 0;
    if (peer)
      peer_s = collect(
          "peer: pytorch_fashion.py --tuned", [&](int s) { return run_peer(peer_script, s); }, peer_runs);
    auto with = [&](std::vector<std::string> extra, int seed) {
      extra.insert(extra.begin(), sets.begin(), sets.end());
      extra.push_back("seed=" + std::to_string(seed));
      return extra;
    };
    const double base_s = collect(
        "recipes/fashion_mnist.yaml",
        [&](int s) {
          return run_recipe(baseline, with({"eval_interval=100ba", "callbacks.threshold_stopper.threshold=0.91"}, s));
        },
        seeds);
    const double fast_s = collect(
        "recipes/fashion_mnist_fast.yaml", [&](int s) { return run_recipe(fast, with({}, s)); }, seeds);
    out = {{"seeds", seeds}, {"baseline_s", base_s}, {"fast_s", fast_s}};
    if (peer) {
      out["peer_s"] = peer_s;
      out["speedup_fast"] = peer_s / fast_s;
      out["speedup_baseline"] = peer_s / base_s;
    }
    if (full) {
      const Result r = run_recipe(fast, with({"callbacks={}"}, 0));
      print("fast, no stopper, full length, seed 0", r);
      out["fast_full_accuracy"] = r.final_accuracy;
    }
    if (ablate) {
      const YAML::Node algorithms = YAML::LoadFile(fast)["algorithms"];
      std::vector<std::string> names;
      for (auto it = algorithms.begin(); it != algorithms.end(); ++it) names.push_back(it->first.as<std::string>());
      std::vector<std::pair<std::string, double>> table;
      for (const auto& name : names) {
        // The recipe's algorithms less one, as a --set of the whole section.
        YAML::Node less = YAML::Clone(algorithms);
        less.remove(name);
        YAML::Emitter e;
        e << YAML::Flow << less;
        const double s = collect(
            "without " + name,
            [&](int seed) { return run_recipe(fast, with({"algorithms=" + std::string(e.c_str())}, seed)); }, seeds);
        table.emplace_back(name, s);
        out["without_" + name] = s;
      }
      print_table("without", "(none: the recipe)", fast_s, table);
    }
    if (!add.empty()) {
      std::vector<std::pair<std::string, double>> table;
      for (const auto& spec : add) {
        const auto eq = spec.find('=');
        const std::string name = spec.substr(0, eq);
        const std::string options = eq == std::string::npos ? "" : spec.substr(eq + 1);
        const double s = collect(
            "with " + spec,
            [&](int seed) { return run_recipe(fast, with({"algorithms." + name + "=" + options}, seed)); }, seeds);
        table.emplace_back(spec, s);
        out["with_" + name] = s;
      }
      print_table("adding", "(nothing: the recipe)", fast_s, table);
    }
    std::printf("\nmedians:");
    for (const auto& row : rows) {
      const double m = median(row.times);
      std::printf("\n  %-44s %s  (%d/%zu reached 91%%, final acc %.4f)", row.name.c_str(),
                  m >= 1e9 ? "  not reached" : (std::to_string(m).substr(0, 5) + " s").c_str(), row.reached,
                  row.times.size(), row.final_accuracy);
    }
    if (peer && fast_s > 0) std::printf("\n  speed-up of the fast recipe over the peer: %.2fx", peer_s / fast_s);
    std::printf("\n%s\n", out.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tta: %s\n", e.what());
    return 1;
  }
  return 0;
}
