#include "baton/loggers/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace baton {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!(hi > lo)) {
    hi = lo + 1.0;
  }
  const double raw = (hi - lo) / std::max(1, count - 1);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

std::string line_chart_svg(const std::vector<Series>& series, const ChartOptions& o) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y0 -= 0.5, y1 += 0.5;
  const double pad = (y1 - y0) * 0.05;
  y0 -= pad, y1 += pad;
  const std::vector<double> xt = nice_ticks(x0, x1);
  const std::vector<double> yt = nice_ticks(y0, y1);
  const double left = 70, right = o.width - 180.0, top = 40, bottom = o.height - 50.0;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (right - left); };
  auto py = [&](double y) { return bottom - (y - y0) / (y1 - y0) * (bottom - top); };

  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << o.width << "\" height=\"" << o.height
      << "\" viewBox=\"0 0 " << o.width << ' ' << o.height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << num((left + right) / 2) << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
      << escape(o.title) << "</text>\n";
  // Grid, ticks and labels.
  svg << "<g class=\"axes\" stroke=\"#ccc\" stroke-width=\"1\">\n";
  for (double t : xt) {
    if (t < x0 || t > x1) continue;
    svg << "<line x1=\"" << num(px(t)) << "\" y1=\"" << num(top) << "\" x2=\"" << num(px(t)) << "\" y2=\""
        << num(bottom) << "\"/>\n";
  }
  for (double t : yt) {
    if (t < y0 || t > y1) continue;
    svg << "<line x1=\"" << num(left) << "\" y1=\"" << num(py(t)) << "\" x2=\"" << num(right) << "\" y2=\""
        << num(py(t)) << "\"/>\n";
  }
  svg << "</g>\n<g class=\"frame\" stroke=\"black\" fill=\"none\">\n<rect x=\"" << num(left) << "\" y=\"" << num(top)
      << "\" width=\"" << num(right - left) << "\" height=\"" << num(bottom - top)
      << "\"/>\n</g>\n<g class=\"ticks\">\n";
  for (double t : xt) {
    if (t < x0 || t > x1) continue;
    svg << "<text x=\"" << num(px(t)) << "\" y=\"" << num(bottom + 16) << "\" text-anchor=\"middle\">" << label(t)
        << "</text>\n";
  }
  for (double t : yt) {
    if (t < y0 || t > y1) continue;
    svg << "<text x=\"" << num(left - 6) << "\" y=\"" << num(py(t) + 4) << "\" text-anchor=\"end\">" << label(t)
        << "</text>\n";
  }
  svg << "</g>\n<text x=\"" << num((left + right) / 2) << "\" y=\"" << num(bottom + 36) << "\" text-anchor=\"middle\">"
      << escape(o.x_label) << "</text>\n<text transform=\"translate(16 " << num((top + bottom) / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(o.y_label.empty() ? o.title : o.y_label) << "</text>\n";
  // One path per series, and the legend.
  for (std::size_t i = 0; i < series.size(); ++i) {
    const char* colour = kColours[i % (sizeof kColours / sizeof kColours[0])];
    std::string d;
    for (const auto& [x, y] : series[i].points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      d += (d.empty() ? "M" : " L") + num(px(x)) + " " + num(py(y));
    }
    svg << "<path class=\"series\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" d=\"" << d
        << "\"><title>" << escape(series[i].name) << "</title></path>\n";
    const double ly = top + 10 + 20.0 * static_cast<double>(i);
    svg << "<g class=\"legend\"><line x1=\"" << num(right + 14) << "\" y1=\"" << num(ly) << "\" x2=\""
        << num(right + 38) << "\" y2=\"" << num(ly) << "\" stroke=\"" << colour << "\" stroke-width=\"3\"/><text x=\""
        << num(right + 44) << "\" y=\"" << num(ly + 4) << "\">" << escape(series[i].name) << "</text></g>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace baton
