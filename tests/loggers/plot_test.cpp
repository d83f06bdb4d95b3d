// Charts of runs as SVG (src/loggers/plot.cpp).

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/loggers/plot.h"

namespace baton {
namespace {

// Tags balance (every <a> closed by </a> or self-closed), and attribute values are quoted.
bool well_formed(const std::string& xml) {
  std::vector<std::string> open;
  std::size_t i = 0;
  while ((i = xml.find('<', i)) != std::string::npos) {
    const std::size_t end = xml.find('>', i);
    if (end == std::string::npos) return false;
    const std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return false;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return false;
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
  }
  return open.empty();
}

TEST(Plot, AnSvgWithOnePathPerRunAxesAndALegend) {
  const std::string svg = line_chart_svg(
      {{"run <a>", {{0, 0.5}, {100, 0.8}, {200, 0.9}}}, {"run-b", {{0, 0.4}, {100, std::nan("")}, {200, 0.85}}}},
      ChartOptions().title("eval/accuracy"));
  EXPECT_TRUE(well_formed(svg));
  std::size_t paths = 0;
  for (std::size_t i = 0; (i = svg.find("<path class=\"series\"", i)) != std::string::npos; ++i) ++paths;
  EXPECT_EQ(paths, 2U);
  EXPECT_THAT(svg, ::testing::HasSubstr("run &lt;a&gt;"));  // escaped
  EXPECT_THAT(svg, ::testing::HasSubstr(">eval/accuracy</text>"));
  EXPECT_THAT(svg, ::testing::HasSubstr(">100</text>"));  // an x tick
  EXPECT_THAT(nice_ticks(0, 1), ::testing::ElementsAre(0, 0.2, 0.4, 0.6000000000000001, 0.8, 1));
  EXPECT_THAT(nice_ticks(3, 1404), ::testing::ElementsAre(500, 1000));
}

}  // namespace
}  // namespace baton
