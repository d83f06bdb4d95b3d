// Line charts as plain SVG, with no plotting dependency: what `baton plot` draws.
//
//   std::string svg = baton::line_chart_svg({{"run-a", {{1, 0.5}, {2, 0.7}}}},
//   baton::ChartOptions().title("eval/accuracy"));
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "baton/core/options.h"

namespace baton {

struct Series {
  std::string name{};                             // the legend's label
  std::vector<std::pair<double, double>> points;  // (x, y), in x order
};

class ChartOptions {
  BATON_ARG(std::string, title);
  BATON_ARG(std::string, x_label) = "step";
  BATON_ARG(std::string, y_label);  // default: the title
  BATON_ARG(int, width) = 800;
  BATON_ARG(int, height) = 480;
};

// An SVG document: axes with "nice" ticks and labels, one <path class="series"> per series (in
// distinct colours), and a legend. Non-finite points are skipped. Text is XML-escaped.
std::string line_chart_svg(const std::vector<Series>& series, const ChartOptions& options);

// Round tick values covering [lo, hi], about `count` of them (1, 2 or 5 times a power of ten apart).
std::vector<double> nice_ticks(double lo, double hi, int count = 6);

}  // namespace baton
