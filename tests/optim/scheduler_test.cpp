#include "baton/optim/scheduler.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace baton {
namespace {

constexpr double kPi = 3.14159265358979323846;
const ScheduleClock kClock{/*batches_per_epoch=*/10, /*batch_size=*/32, /*max_batches=*/100};

double at(const SchedulerOptions& spec, double batch) { return make_scheduler(spec)->lr(1.0, batch, kClock); }

TEST(Scheduler, Constant) {
  SchedulerOptions s = SchedulerOptions().name("constant").alpha(0.5).t_max(Time::parse("2ep"));
  EXPECT_DOUBLE_EQ(at(s, 0), 0.5);
  EXPECT_DOUBLE_EQ(at(s, 19), 0.5);
  EXPECT_DOUBLE_EQ(at(s, 20), 1.0);
}

TEST(Scheduler, Step) {
  SchedulerOptions s = SchedulerOptions().name("step").gamma(0.5).step_size(Time::parse("2ep"));
  for (double b : {0.0, 19.0, 20.0, 45.0, 99.0}) EXPECT_DOUBLE_EQ(at(s, b), std::pow(0.5, std::floor(b / 20))) << b;
}

TEST(Scheduler, MultiStep) {
  SchedulerOptions s =
      SchedulerOptions().name("multistep").gamma(0.1).milestones({Time::parse("3ep"), Time::parse("80ba")});
  EXPECT_DOUBLE_EQ(at(s, 29), 1.0);
  EXPECT_DOUBLE_EQ(at(s, 30), 0.1);
  EXPECT_NEAR(at(s, 80), 0.01, 1e-15);
}

TEST(Scheduler, Exponential) {
  SchedulerOptions s = SchedulerOptions().name("exponential").gamma(0.9).decay_period(Time::parse("1ep"));
  for (double b : {0.0, 5.0, 37.0}) EXPECT_DOUBLE_EQ(at(s, b), std::pow(0.9, b / 10)) << b;
}

TEST(Scheduler, LinearAndLinearWithWarmup) {
  SchedulerOptions lin = SchedulerOptions().name("linear").alpha_i(1.0).alpha_f(0.2).t_max(Time::parse("1dur"));
  for (double b : {0.0, 25.0, 100.0, 120.0}) EXPECT_DOUBLE_EQ(at(lin, b), 1.0 - 0.8 * std::min(1.0, b / 100)) << b;
  SchedulerOptions warm =
      SchedulerOptions().name("linear_warmup").alpha_i(1.0).alpha_f(0.0).t_warmup(Time::parse("1ep"));
  EXPECT_DOUBLE_EQ(at(warm, 0), 0.0);
  EXPECT_DOUBLE_EQ(at(warm, 5), 0.5);
  EXPECT_DOUBLE_EQ(at(warm, 10), 1.0);
  EXPECT_DOUBLE_EQ(at(warm, 55), 0.5);
  EXPECT_DOUBLE_EQ(at(warm, 100), 0.0);
}

TEST(Scheduler, CosineWithWarmup) {
  SchedulerOptions s = SchedulerOptions().name("cosine_warmup").alpha_f(0.1).t_warmup(Time::parse("20ba"));
  EXPECT_DOUBLE_EQ(at(s, 10), 0.5);
  for (double b : {20.0, 40.0, 60.0, 100.0}) {
    const double frac = (b - 20) / 80;
    EXPECT_NEAR(at(s, b), 0.1 + 0.9 * 0.5 * (1 + std::cos(kPi * frac)), 1e-12) << b;
  }
}

TEST(Scheduler, Polynomial) {
  SchedulerOptions s = SchedulerOptions().name("polynomial").alpha_f(0.0).power(2.0);
  for (double b : {0.0, 30.0, 100.0}) EXPECT_NEAR(at(s, b), std::pow(1 - b / 100, 2), 1e-12) << b;
}

// torchtitan's linear_warmup_stable_decay, written out for steps of 0 to max - 1: 10 warm-up steps,
// a decay of 20 (0.2dur of 100), down to alpha_f 0.1.
double torchtitan_wsd(int step, int warmup, int decay, int max, const std::string& shape, double lr_min) {
  const int stable_end = max - decay;
  if (step < warmup) return static_cast<double>(step + 1) / (warmup + 1);
  if (step < stable_end || decay == 0) return 1.0;
  const double progress = static_cast<double>(step + 1 - stable_end) / (decay + 1);
  double adjustment = 1 - progress;
  if (shape == "sqrt") adjustment = 1 - std::sqrt(progress);
  if (shape == "cosine") adjustment = 0.5 * (1.0 + std::cos(kPi * progress));
  return lr_min + (1 - lr_min) * adjustment;
}

TEST(Scheduler, WarmupStableDecayIsTorchtitansAtEveryStep) {
  for (const std::string shape : {"linear", "cosine", "sqrt"}) {
    SchedulerOptions s = SchedulerOptions()
                             .name("wsd")
                             .t_warmup(Time::parse("10ba"))
                             .t_decay(Time::parse("0.2dur"))
                             .decay_shape(shape)
                             .alpha_f(0.1);
    for (int b = 0; b < 100; ++b)
      EXPECT_NEAR(at(s, b), torchtitan_wsd(b, 10, 20, 100, shape, 0.1), 1e-12) << shape << b;
  }
  // No t_decay: the decay is everything after the warm-up (torchtitan without decay_ratio).
  SchedulerOptions all = SchedulerOptions().name("wsd").t_warmup(Time::parse("10ba"));
  for (int b = 0; b < 100; ++b) EXPECT_NEAR(at(all, b), torchtitan_wsd(b, 10, 90, 100, "linear", 0.0), 1e-12) << b;
}

// max_duration raised in the stable phase (100 to 150 batches, --autoresume with a longer run):
// every step so far has the rate it had, and the stable phase goes on to the new decay.
TEST(Scheduler, WarmupStableDecayRaisedInTheStablePhaseContinuesWithoutAJump) {
  SchedulerOptions s = SchedulerOptions().name("wsd").t_warmup(Time::parse("10ba")).t_decay(Time::parse("20ba"));
  const ScheduleClock longer{10, 32, 150};
  const auto scheduler = make_scheduler(s);
  for (int b = 0; b < 80; ++b) EXPECT_DOUBLE_EQ(scheduler->lr(1.0, b, longer), scheduler->lr(1.0, b, kClock)) << b;
  EXPECT_DOUBLE_EQ(scheduler->lr(1.0, 120, longer), 1.0);
  EXPECT_NEAR(scheduler->lr(1.0, 149, longer), torchtitan_wsd(149, 10, 20, 150, "linear", 0.0), 1e-12);
  EXPECT_THROW(make_scheduler(SchedulerOptions().name("wsd").decay_shape("exp")), std::invalid_argument);
}

TEST(Scheduler, OneCycleMatchesPyTorch) {
  // torch.optim.lr_scheduler.OneCycleLR(SGD(momentum=0.9), max_lr=0.1, total_steps=100), read
  // with python3-torch 1.13: (step, lr, momentum).
  const double expected[][3] = {
      {0, 0.0040000000000000036, 0.94999999999999996}, {10, 0.029516394846410082, 0.92342042203498953},
      {29, 0.10000000000000001, 0.84999999999999998},  {30, 0.099949653528452434, 0.85005034667293422},
      {50, 0.079389345057573196, 0.87061073738537631}, {99, 3.9999999999999998e-07, 0.94999999999999996}};
  auto s = make_scheduler(SchedulerOptions().name("one_cycle").max_lr(0.1));
  for (const auto& row : expected) {
    EXPECT_NEAR(s->lr(0.05, row[0], kClock), row[1], 1e-12) << row[0];
    EXPECT_NEAR(*s->momentum(row[0], kClock), row[2], 1e-12) << row[0];
  }
}

TEST(Scheduler, OneCycleOverARunOfOneBatchGivesItsFirstValue) {  // a smoke run (fast_dev_run) runs
  const ScheduleClock one{/*batches_per_epoch=*/1, /*batch_size=*/32, /*max_batches=*/1};
  auto s = make_scheduler(SchedulerOptions().name("one_cycle").max_lr(0.1));
  EXPECT_NEAR(s->lr(0.05, 0, one), 0.004, 1e-12);
  EXPECT_NEAR(*s->momentum(0, one), 0.95, 1e-12);
}

TEST(Scheduler, UnknownNamesAreListed) {
  try {
    make_scheduler(SchedulerOptions().name("cosine"));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("unknown scheduler 'cosine' (known: constant, step"));
  }
}

}  // namespace
}  // namespace baton
