// Charts of runs as SVG (src/loggers/plot.cpp).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/loggers/plot.h"
#include "loggers/helpers.h"

namespace baton {
namespace {

using testing::loss_steps;
using testing::move_to_batch;
using testing::TempDir;
using testing::well_formed;

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
