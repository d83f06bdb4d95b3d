#include "baton/loggers/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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

// The plotted area: the data's bounds and where they fall in the picture.
struct Frame {
  double x0, x1, y0, y1;
  double left, right, top, bottom;
  double px(double x) const { return left + (x - x0) / (x1 - x0) * (right - left); }
  double py(double y) const { return bottom - (y - y0) / (y1 - y0) * (bottom - top); }
};

Frame frame_for(const std::vector<Series>& series, const ChartOptions& o) {
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
  return {x0, x1, y0 - pad, y1 + pad, 70, o.width() - 180.0, 40, o.height() - 50.0};
}

// The grid, the frame, the ticks' labels and the axes' titles.
void write_axes(std::ostringstream& svg, const Frame& f, const ChartOptions& o) {
  std::vector<double> xt, yt;
  for (double t : nice_ticks(f.x0, f.x1)) {
    if (t >= f.x0 && t <= f.x1) xt.push_back(t);
  }
  for (double t : nice_ticks(f.y0, f.y1)) {
    if (t >= f.y0 && t <= f.y1) yt.push_back(t);
  }
  svg << "<g class=\"axes\" stroke=\"#ccc\" stroke-width=\"1\">\n";
  for (double t : xt) {
    svg << "<line x1=\"" << num(f.px(t)) << "\" y1=\"" << num(f.top) << "\" x2=\"" << num(f.px(t)) << "\" y2=\""
        << num(f.bottom) << "\"/>\n";
  }
  for (double t : yt) {
    svg << "<line x1=\"" << num(f.left) << "\" y1=\"" << num(f.py(t)) << "\" x2=\"" << num(f.right) << "\" y2=\""
        << num(f.py(t)) << "\"/>\n";
  }
  svg << "</g>\n<g class=\"frame\" stroke=\"black\" fill=\"none\">\n<rect x=\"" << num(f.left) << "\" y=\""
      << num(f.top) << "\" width=\"" << num(f.right - f.left) << "\" height=\"" << num(f.bottom - f.top)
      << "\"/>\n</g>\n<g class=\"ticks\">\n";
  for (double t : xt) {
    svg << "<text x=\"" << num(f.px(t)) << "\" y=\"" << num(f.bottom + 16) << "\" text-anchor=\"middle\">" << label(t)
        << "</text>\n";
  }
  for (double t : yt) {
    svg << "<text x=\"" << num(f.left - 6) << "\" y=\"" << num(f.py(t) + 4) << "\" text-anchor=\"end\">" << label(t)
        << "</text>\n";
  }
  svg << "</g>\n<text x=\"" << num((f.left + f.right) / 2) << "\" y=\"" << num(f.bottom + 36)
      << "\" text-anchor=\"middle\">" << escape(o.x_label()) << "</text>\n<text transform=\"translate(16 "
      << num((f.top + f.bottom) / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
      << escape(o.y_label().empty() ? o.title() : o.y_label()) << "</text>\n";
}

// One path per series, and the legend.
void write_series(std::ostringstream& svg, const Frame& f, const std::vector<Series>& series) {
  for (std::size_t i = 0; i < series.size(); ++i) {
    const char* colour = kColours[i % (sizeof kColours / sizeof kColours[0])];
    std::string d;
    for (const auto& [x, y] : series[i].points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      d += (d.empty() ? "M" : " L") + num(f.px(x)) + " " + num(f.py(y));
    }
    svg << "<path class=\"series\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" d=\"" << d
        << "\"><title>" << escape(series[i].name) << "</title></path>\n";
    const double ly = f.top + 10 + 20.0 * static_cast<double>(i);
    svg << "<g class=\"legend\"><line x1=\"" << num(f.right + 14) << "\" y1=\"" << num(ly) << "\" x2=\""
        << num(f.right + 38) << "\" y2=\"" << num(ly) << "\" stroke=\"" << colour << "\" stroke-width=\"3\"/><text x=\""
        << num(f.right + 44) << "\" y=\"" << num(ly + 4) << "\">" << escape(series[i].name) << "</text></g>\n";
  }
}

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
  for (auto k = static_cast<int64_t>(std::ceil(lo / step)); static_cast<double>(k) * step <= hi + step * 1e-9; ++k) {
    ticks.push_back(static_cast<double>(k) * step);
  }
  return ticks;
}

std::string line_chart_svg(const std::vector<Series>& series, const ChartOptions& o) {
  const Frame f = frame_for(series, o);
  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << o.width() << "\" height=\"" << o.height()
      << "\" viewBox=\"0 0 " << o.width() << ' ' << o.height() << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << num((f.left + f.right) / 2) << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
      << escape(o.title()) << "</text>\n";
  write_axes(svg, f, o);
  write_series(svg, f, series);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace baton
