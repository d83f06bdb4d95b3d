#include "baton/optim/scheduler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "baton/core/options.h"
#include "optim/builders.h"

namespace baton {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Linear warm-up from 0 to 1 over `warmup` batches; nullopt once it is over.
std::optional<double> warmup(double batch, double warmup_batches) {
  if (warmup_batches > 0 && batch < warmup_batches) return batch / warmup_batches;
  return std::nullopt;
}

// The fraction of the way from `start` to `end` batches, clamped to [0, 1].
double progress(double batch, double start, double end) {
  if (end <= start) return 1.0;
  return std::clamp((batch - start) / (end - start), 0.0, 1.0);
}

class Multiplier : public Scheduler {
 public:
  explicit Multiplier(SchedulerOptions spec) : spec_(std::move(spec)) {}
  std::string name() const override { return spec_.name(); }
  double lr(double base_lr, double batch, const ScheduleClock& clock) const override {
    return base_lr * multiplier(batch, clock);
  }
  virtual double multiplier(double batch, const ScheduleClock& clock) const = 0;

 protected:
  // A linear warm-up over t_warmup, then alpha_f + (1 - alpha_f) * decay(f), f the progress from
  // the warm-up's end to t_max (0 to 1).
  template <typename Decay>
  double warm_then_decay(double batch, const ScheduleClock& c, Decay decay) const {
    const double w = c.to_batches(spec_.t_warmup());
    if (auto up = warmup(batch, w)) return *up;
    return spec_.alpha_f() + (1.0 - spec_.alpha_f()) * decay(progress(batch, w, c.to_batches(spec_.t_max())));
  }

  SchedulerOptions spec_;
};

class Constant : public Multiplier {
  using Multiplier::Multiplier;
  double multiplier(double batch, const ScheduleClock& c) const override {
    return batch < c.to_batches(spec_.t_max()) ? spec_.alpha() : 1.0;
  }
};

class Step : public Multiplier {
  using Multiplier::Multiplier;
  double multiplier(double batch, const ScheduleClock& c) const override {
    const double size = c.to_batches(spec_.step_size());
    if (size <= 0) throw std::invalid_argument("scheduler 'step': step_size must be positive");
    return std::pow(spec_.gamma(), std::floor(batch / size));
  }
};

class MultiStep : public Multiplier {
  using Multiplier::Multiplier;
  double multiplier(double batch, const ScheduleClock& c) const override {
    int passed = 0;
    for (const Time& m : spec_.milestones()) passed += batch >= c.to_batches(m);
    return std::pow(spec_.gamma(), passed);
  }
};

class Exponential : public Multiplier {
  using Multiplier::Multiplier;
  double multiplier(double batch, const ScheduleClock& c) const override {
    return std::pow(spec_.gamma(), batch / c.to_batches(spec_.decay_period()));
  }
};

class Linear : public Multiplier {
  using Multiplier::Multiplier;
  double multiplier(double batch, const ScheduleClock& c) const override {
    const double w = c.to_batches(spec_.t_warmup());
    if (spec_.name() == "linear_warmup") {
      if (auto up = warmup(batch, w)) return *up * spec_.alpha_i();
    }
    const double start = spec_.name() == "linear_warmup" ? w : 0.0;
    return spec_.alpha_i() + (spec_.alpha_f() - spec_.alpha_i()) * progress(batch, start, c.to_batches(spec_.t_max()));
  }
};

class CosineWarmup : public Multiplier {
  using Multiplier::Multiplier;
  double multiplier(double batch, const ScheduleClock& c) const override {
    return warm_then_decay(batch, c, [](double f) { return 0.5 * (1.0 + std::cos(kPi * f)); });
  }
};

class Polynomial : public Multiplier {
  using Multiplier::Multiplier;
  double multiplier(double batch, const ScheduleClock& c) const override {
    return warm_then_decay(batch, c, [this](double f) { return std::pow(1.0 - f, spec_.power()); });
  }
};

// Warmup, stable, decay (torchtitan's linear_warmup_stable_decay; batch b counts from 0): (b + 1) /
// (warmup + 1) during the warm-up, 1 until the decay, then alpha_f + (1 - alpha_f) * shape(p) with
// p = (b + 1 - decay's start) / (decay + 1). The decay is the last t_decay of max_duration, so a
// max_duration raised in the stable phase moves it later and changes nothing before it.
class Wsd : public Multiplier {
  using Multiplier::Multiplier;
  double multiplier(double batch, const ScheduleClock& c) const override {
    const double warm = c.to_batches(spec_.t_warmup()), end = c.max_batches;
    const double decay = spec_.t_decay() ? std::min(c.to_batches(*spec_.t_decay()), end - warm) : end - warm;
    const double start = end - decay;
    batch = std::min(batch, end);
    if (batch < warm) return (batch + 1) / (warm + 1);
    if (batch < start || decay <= 0) return 1.0;
    const double p = (batch + 1 - start) / (decay + 1);
    double shape = 1.0 - p;
    if (spec_.decay_shape() == "cosine") shape = 0.5 * (1.0 + std::cos(kPi * p));
    if (spec_.decay_shape() == "sqrt") shape = 1.0 - std::sqrt(p);
    return spec_.alpha_f() + (1.0 - spec_.alpha_f()) * shape;
  }
};

// torch.optim.lr_scheduler.OneCycleLR with cosine annealing and two phases.
class OneCycle : public Scheduler {
 public:
  explicit OneCycle(SchedulerOptions spec) : spec_(std::move(spec)) {}
  std::string name() const override { return "one_cycle"; }

  double lr(double base_lr, double batch, const ScheduleClock& c) const override {
    const double max_lr = spec_.max_lr().value_or(base_lr);
    const double initial = max_lr / spec_.div_factor();
    const double min_lr = initial / spec_.final_div_factor();
    return phase(batch, c, initial, max_lr, min_lr);
  }

  std::optional<double> momentum(double batch, const ScheduleClock& c) const override {
    if (!spec_.cycle_momentum()) return std::nullopt;
    return phase(batch, c, spec_.max_momentum(), spec_.base_momentum(), spec_.max_momentum());
  }

 private:
  // Anneals start -> peak over the first pct_start of the run, then peak -> end.
  double phase(double batch, const ScheduleClock& c, double start, double peak, double end) const {
    const double total = c.max_batches;
    if (total < 2) return start;  // a run of one batch (fast_dev_run, a smoke run): its first value
    const double up_end = spec_.pct_start() * total - 1.0;
    const double down_end = total - 1.0;
    auto anneal = [](double from, double to, double pct) {
      return to + (from - to) / 2.0 * (std::cos(kPi * pct) + 1.0);
    };
    if (batch <= up_end) return anneal(start, peak, up_end > 0 ? batch / up_end : 1.0);
    return anneal(peak, end, std::min(1.0, (batch - up_end) / (down_end - up_end)));
  }

  SchedulerOptions spec_;
};

template <typename S>
std::shared_ptr<Scheduler> make_schedule(const SchedulerOptions& spec) {
  return std::make_shared<S>(spec);
}

}  // namespace

// The options a schedule uses, checked when it is made (not at its first step, after a run has
// started): times a schedule can count, positive periods, finite numbers. OptionError names the key.
void check_schedule(const SchedulerOptions& spec) {
  const std::string who = "scheduler '" + spec.name() + "': ";
  auto time_ok = [&](const char* key, const Time& t, bool positive) {
    const TimeUnit u = t.unit();
    if (u != TimeUnit::kEpoch && u != TimeUnit::kBatch && u != TimeUnit::kSample && u != TimeUnit::kDuration) {
      throw OptionError(key, who + key + " " + t.to_string() + ": a schedule counts ep, ba, sp or dur");
    }
    if (!std::isfinite(t.value()) || t.value() < 0 || (positive && t.value() <= 0)) {
      throw OptionError(key,
                        who + key + " must be " + (positive ? "more than 0" : "0 or more") + ", got " + t.to_string());
    }
  };
  time_ok("t_max", spec.t_max(), false);
  time_ok("t_warmup", spec.t_warmup(), false);
  if (spec.name() == "step") time_ok("step_size", spec.step_size(), true);
  if (spec.t_decay()) time_ok("t_decay", *spec.t_decay(), false);
  if (spec.decay_shape() != "linear" && spec.decay_shape() != "cosine" && spec.decay_shape() != "sqrt") {
    throw OptionError("decay_shape", who + "decay_shape '" + spec.decay_shape() + "': expected linear, cosine or sqrt");
  }
  if (spec.name() == "exponential") time_ok("decay_period", spec.decay_period(), true);
  for (const Time& m : spec.milestones()) time_ok("milestones", m, false);
  const std::pair<const char*, double> numbers[] = {{"alpha", spec.alpha()},
                                                    {"alpha_i", spec.alpha_i()},
                                                    {"alpha_f", spec.alpha_f()},
                                                    {"gamma", spec.gamma()},
                                                    {"power", spec.power()},
                                                    {"div_factor", spec.div_factor()},
                                                    {"final_div_factor", spec.final_div_factor()}};
  for (const auto& [key, v] : numbers) {
    if (!std::isfinite(v) || v < 0) throw OptionError(key, who + key + " must be a finite number of at least 0");
  }
  if (spec.name() == "one_cycle" && !(spec.div_factor() > 0 && spec.final_div_factor() > 0)) {
    throw OptionError("div_factor", who + "div_factor and final_div_factor must be more than 0");
  }
  if (spec.max_lr() && !(std::isfinite(*spec.max_lr()) && *spec.max_lr() > 0)) {
    throw OptionError("max_lr", who + "max_lr must be a positive number");
  }
}

std::shared_ptr<Scheduler> make_constant_schedule(const SchedulerOptions& spec) {
  return make_schedule<Constant>(spec);
}
std::shared_ptr<Scheduler> make_step_schedule(const SchedulerOptions& spec) { return make_schedule<Step>(spec); }
std::shared_ptr<Scheduler> make_multistep_schedule(const SchedulerOptions& spec) {
  return make_schedule<MultiStep>(spec);
}
std::shared_ptr<Scheduler> make_exponential_schedule(const SchedulerOptions& spec) {
  return make_schedule<Exponential>(spec);
}
std::shared_ptr<Scheduler> make_linear_schedule(const SchedulerOptions& spec) { return make_schedule<Linear>(spec); }
std::shared_ptr<Scheduler> make_cosine_warmup_schedule(const SchedulerOptions& spec) {
  return make_schedule<CosineWarmup>(spec);
}
std::shared_ptr<Scheduler> make_polynomial_schedule(const SchedulerOptions& spec) {
  return make_schedule<Polynomial>(spec);
}
std::shared_ptr<Scheduler> make_wsd_schedule(const SchedulerOptions& spec) { return make_schedule<Wsd>(spec); }
std::shared_ptr<Scheduler> make_one_cycle_schedule(const SchedulerOptions& spec) {
  if (!(spec.pct_start() > 0 && spec.pct_start() < 1))
    throw OptionError("pct_start", "scheduler 'one_cycle': pct_start must be in (0, 1)");
  return make_schedule<OneCycle>(spec);
}

}  // namespace baton
