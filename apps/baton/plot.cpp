// baton plot RUN_DIR [RUN_DIR...] --metric eval/accuracy [--out plot.svg]
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "baton/io/file.h"
#include "baton/io/run_dir.h"
#include "baton/io/write.h"
#include "baton/loggers/plot.h"
#include "baton/train/checkpoint.h"
#include "baton/train/recipe_file.h"
#include "commands.h"

namespace baton::cli {
namespace {

struct PlotArgs {
  std::vector<std::string> runs;
  std::string metric = "eval/accuracy";
  std::string out = "plot.svg";
};

// The metric's (step, value) pairs from RUN_DIR/metrics.jsonl.
Series read_series(const std::string& run, const std::string& metric) {
  const std::filesystem::path file = RunDir(run).metrics_jsonl();
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    throw RecipeError(file.string() + ": no such file (is " + run + " a baton run directory?)");
  }
  std::istringstream in(read_file(file.string(), {.what = RunDir::kMetricsJsonl, .max_bytes = 4ull << 30}));
  Series s{std::filesystem::path(run).filename().string(), {}};
  if (s.name.empty()) s.name = run;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      // A last line without its newline is being written (or was cut by a kill): not there yet.
      if (in.eof()) break;
      throw std::runtime_error(file.string() + ":" + std::to_string(number) + ": not a JSON object");
    }
    if (j.contains(metric) && j[metric].is_number() && j.contains("step")) {
      s.points.emplace_back(j["step"].get<double>(), j[metric].get<double>());
    }
  }
  return s;
}

void run_plot(const PlotArgs& args) {
  std::vector<std::string> inputs;
  for (const auto& run : args.runs) inputs.push_back(RunDir(run).metrics_jsonl().string());
  check_output(args.out, "--out", inputs);
  std::vector<Series> series;
  std::size_t points = 0;
  for (const auto& run : args.runs) {
    series.push_back(read_series(run, args.metric));
    points += series.back().points.size();
    if (series.back().points.empty())
      std::fprintf(stderr, "baton plot: %s has no %s\n", run.c_str(), args.metric.c_str());
  }
  if (points == 0)
    throw RecipeError("no run has the metric '" + args.metric + "' (see the keys in RUN_DIR/metrics.jsonl)");
  write_file_atomically(args.out, line_chart_svg(series, ChartOptions().title(args.metric)));
  std::printf("plotted %s of %zu run(s), %zu points, to %s\n", args.metric.c_str(), series.size(), points,
              args.out.c_str());
}

}  // namespace

void add_plot(CLI::App& app) {
  auto args = std::make_shared<PlotArgs>();
  CLI::App* cmd = app.add_subcommand("plot", "an SVG line chart of one metric over steps, for one or more runs");
  cmd->add_option("runs", args->runs, "run directories (with metrics.jsonl)")->required();
  cmd->add_option("--metric", args->metric, "the metric to plot (default eval/accuracy)");
  cmd->add_option("--out", args->out, "the SVG file to write (default plot.svg)");
  cmd->callback([args] { run_plot(*args); });
}

}  // namespace baton::cli
