// An experiment's status line (src/exec/experiment_status.cpp): durations as people read them, and
// one plain line a print off a terminal with the counts, the best trial and the ETA.
#include "exec/experiment_status.h"

#include <cstdio>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/exec/engine.h"
#include "baton/exec/middleware.h"
#include "common/test_util.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

TEST(ExperimentStatus, DurationsAreSecondsMinutesOrHours) {
  EXPECT_EQ(detail::format_duration(42.4), "42s");
  EXPECT_EQ(detail::format_duration(187), "3m07s");
  EXPECT_EQ(detail::format_duration(3900), "1h05m");
}

TEST(ExperimentStatus, OffATerminalEachForcedPrintIsOnePlainLine) {
  Chain chain({});
  chain.set_engine(std::make_shared<SequentialEngine>([](TrialContext& t) {
    if (t.parameters().at("x").get<double>() > 5) throw std::runtime_error("too big");
    t.report_final(t.parameters().at("x").get<double>());
  }));
  chain.submit({{"x", 1.0}});
  chain.submit({{"x", 9.0}});
  chain.wait();
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  detail::StatusLine status(chain, 4, out);
  EXPECT_FALSE(status.tty());
  SearchProgress progress;
  progress.completed = 2;
  progress.best = *chain.get(0);
  status.print(progress, true);
  status.print(progress, false);  // within 10 s of the last line: nothing
  std::rewind(out);
  char buf[512] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, out);
  std::fclose(out);
  const std::string text(buf, n);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_THAT(text, HasSubstr("trials 2/4 done, 0 running, 1 failed | best 1 (trial 0 {\"x\":1.0})"));
  EXPECT_THAT(text, HasSubstr("elapsed, ETA "));
}

}  // namespace
}  // namespace baton
