// The dashboard over large inputs: a metrics.jsonl of 1,000,000 lines and a search of 10,000
// trials. Prints how long the server takes to read them, then how long its answers take and how
// big they are (what the page downloads: downsampled curves, the trials). The page's own render
// time over the same data: tests/dashboard/browser_test.py BATON OUT --large DIR.
//
//   build/bin/dashboard_bench [--dir DIR] [--lines 1000000] [--trials 10000]   (DIR kept when given)
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "baton/dashboard/dashboard.h"
#include "baton/exec/storage.h"
#include "baton/io/file.h"

namespace {
namespace fs = std::filesystem;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void write_metrics(const fs::path& dir, int64_t lines) {
  fs::create_directories(dir);
  std::ofstream out(dir / "metrics.jsonl");
  out << std::setprecision(15);
  for (int64_t s = 1; s <= lines; ++s) {
    out << R"({"step":)" << s << R"(,"time":)" << 1.7e9 + 0.01 * static_cast<double>(s) << R"(,"train/loss":)"
        << 2.0 / (1.0 + 1e-4 * static_cast<double>(s)) << "}\n";
  }
  std::ofstream(dir / "summary.json") << "{}\n";
}

void write_search(const fs::path& dir, int64_t trials) {
  fs::create_directories(dir);
  auto storage = baton::open_storage("sqlite://" + (dir / "search.db").string());
  storage->set_meta("search", {{"direction", "minimize"}});
  for (int64_t i = 1; i <= trials; ++i) {
    baton::Trial t;
    t.id = i;
    t.status = baton::TrialStatus::kTrained;
    t.parameters = {{"lr", 1e-4 * static_cast<double>(i % 97)}, {"layers", i % 5}, {"opt", i % 2 ? "sgd" : "adam"}};
    for (int64_t step = 1; step <= 5; ++step)
      t.metrics.intermediate.push_back({step, 1.0 / static_cast<double>(step + i % 13)});
    t.metrics.final = 1.0 / static_cast<double>(6 + i % 13);
    t.started_at = 1.7e9;
    t.ended_at = 1.7e9 + 60;
    storage->save_trial(t);
  }
}

// One GET: its time and size (best of 3).
nlohmann::json timed_get(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  double best = 1e9;
  std::size_t bytes = 0;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto res = client.Get(path.c_str());
    best = std::min(best, seconds_since(t0));
    bytes = res ? res->body.size() : 0;
  }
  return {{"path", path}, {"ms", best * 1e3}, {"bytes", bytes}};
}

}  // namespace

int main(int argc, char** argv) {
  fs::path dir;
  int64_t lines = 1000000, trials = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--dir")
      dir = v;
    else if (a == "--lines")
      lines = std::stoll(v);
    else if (a == "--trials")
      trials = std::stoll(v);
    else
      return std::fprintf(stderr, "usage: dashboard_bench [--dir DIR] [--lines N] [--trials N]\n"), 2;
  }
  const bool keep = !dir.empty();
  if (!keep) dir = fs::temp_directory_path() / ("baton_dashboard_bench_" + std::to_string(::getpid()));
  auto t0 = std::chrono::steady_clock::now();
  if (!fs::exists(dir / "runs" / "big" / "metrics.jsonl")) write_metrics(dir / "runs" / "big", lines);
  if (!fs::exists(dir / "runs" / "search" / "search.db")) write_search(dir / "runs" / "search", trials);
  const double write_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  baton::Dashboard d(baton::DashboardOptions().paths({(dir / "runs").string()}).port(0));
  const double start_s = seconds_since(t0);                 // serving (the URL printed); the data is read meanwhile
  httplib::Client("127.0.0.1", d.port()).Get("/api/runs");  // answered once everything is read
  const double read_s = seconds_since(t0);
  nlohmann::json out = {{"lines", lines},          {"trials", trials},
                        {"write_s", write_s},      {"server_start_s", start_s},
                        {"server_read_s", read_s}, {"answers", nlohmann::json::array()}};
  for (const std::string path : {"/api/runs", "/api/runs/r1/series?keys=train/loss&points=1200",
                                 "/api/runs/r1/series?keys=train/loss&points=1200&x=time", "/api/searches/s1"}) {
    out["answers"].push_back(timed_get(d.port(), path));
  }
  std::cout << out.dump(2) << "\n";
  d.stop();
  if (!keep) baton::remove_tree(dir);
  return 0;
}
