#include "baton/exec/registry.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>

#include "baton/core/registry.h"
#include "baton/exec/cmaes.h"
#include "baton/exec/gp.h"
#include "baton/exec/nsga2.h"
#include "baton/exec/pbt.h"
#include "baton/exec/process.h"
#include "baton/exec/strategy.h"
#include "baton/exec/tpe.h"

namespace baton {
namespace {

using Strategies = Registry<std::unique_ptr<Strategy>, const SearchSpace&, const StrategyOptions&, OptionReader&>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxCount = 1000000;  // more candidates or trials than this is a typo

// A strategy that optimises one objective without constraints refuses more.
void one_objective(const std::string& name, const StrategyOptions& o) {
  if (o.directions().size() > 1)
    throw std::invalid_argument("strategy " + name +
                                " optimises one objective; for several use nsga2, motpe or random");
  if (!o.constraints().empty())
    throw std::invalid_argument("strategy " + name + " does not model constraints; use tpe, gp or nsga2");
}

std::unique_ptr<Strategy> make_tpe(const SearchSpace& space, const StrategyOptions& o, OptionReader& r) {
  TpeOptions t =
      TpeOptions().seed(o.seed()).maximize(o.maximize()).directions(o.directions()).constraints(o.constraints());
  r.read("startup_trials", t.startup_trials(), 0, kMaxCount);
  r.read("candidates", t.candidates(), 1, kMaxCount);
  r.read("multivariate", t.multivariate());
  r.read("prior_weight", t.prior_weight(), 0.0, kInf);
  r.read("max_rest", t.max_rest(), 1, kMaxCount);
  r.read("constant_liar", t.constant_liar());
  r.read("gamma", t.gamma(), 0.0, 1.0);
  r.read("ei_weights", t.ei_weights());
  r.read("clip_exponent", t.clip_exponent(), 0.0, kInf);
  r.read("min_bandwidth", t.min_bandwidth(), 0.0, 0.1);
  return std::make_unique<TpeStrategy>(space, t);
}

// evolution and regularized_evolution: the settings given over the defaults `e` (strategy.h).
std::unique_ptr<Strategy> make_evolution(const std::string& name, const SearchSpace& space, const StrategyOptions& o,
                                         OptionReader& r, EvolutionOptions e) {
  one_objective(name, o);
  r.read("population", e.population(), 2, kMaxCount);
  r.read("sample_size", e.sample_size(), 1, kMaxCount);
  r.read("mutation_prob", e.mutation_prob());
  if (!(e.mutation_prob() >= 0.0 && e.mutation_prob() <= 1.0))
    r.fail("mutation_prob", "expected a number from 0 (one parameter a mutation) to 1, got '" +
                                nlohmann::json(e.mutation_prob()).dump() + "'");
  r.read("dedup", e.dedup());
  std::string on_failure = e.failure_is_worst() ? "worst" : "ignore";
  r.read("on_failure", on_failure);
  if (on_failure != "ignore" && on_failure != "worst")
    r.fail("on_failure", "'" + on_failure + "': expected ignore (a failed trial is left out) or worst");
  e.failure_is_worst(on_failure == "worst");
  return std::make_unique<EvolutionStrategy>(space, o.seed(), o.maximize(), e);
}

// pbt's perturb: factors as "0.8:1.2" (a command line's) or a list.
std::vector<double> read_factors(OptionReader& r, const std::string& key, std::vector<double> fallback) {
  if (!r.has(key) || !r.json()[key].is_string()) {
    r.read(key, fallback);
    return fallback;
  }
  const std::string text = r.text(key, "");
  std::vector<double> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(':', start), text.size());
    const std::string part = text.substr(start, end - start);
    char* stop = nullptr;
    const double v = std::strtod(part.c_str(), &stop);
    if (part.empty() || stop != part.c_str() + part.size() || !std::isfinite(v))
      r.fail(key, "expected factors separated by ':' (perturb=0.8:1.2), got '" + text + "'");
    out.push_back(v);
    start = end + 1;
  }
  return out;
}

// Each strategy reads its own options (docs/search.md has the table) into its XxxOptions, whose
// fields hold the defaults.
const Strategies& strategy_registry() {
  static const Strategies strategies(
      "strategy", Strategies::Order::kRegistration,
      {{"random",
        [](const SearchSpace& space, const StrategyOptions& o, OptionReader&) {
          return std::unique_ptr<Strategy>(std::make_unique<RandomStrategy>(space, o.seed()));
        }},
       {"grid",
        [](const SearchSpace& space, const StrategyOptions& o, OptionReader& r) {
          int points = o.grid_points();
          r.read("points", points, 2, kMaxCount);
          return std::unique_ptr<Strategy>(std::make_unique<GridStrategy>(space, points));
        }},
       {"tpe", make_tpe},
       {"motpe", make_tpe},
       {"gp",
        [](const SearchSpace& space, const StrategyOptions& o, OptionReader& r) {
          if (o.directions().size() > 1)
            throw std::invalid_argument("strategy gp optimises one objective; for several use nsga2, motpe or random");
          GpOptions g = GpOptions().seed(o.seed()).maximize(o.maximize()).constraints(o.constraints());
          r.read("startup_trials", g.startup_trials(), 0, kMaxCount);
          r.read("candidates", g.candidates(), 1, kMaxCount);
          r.read("local_starts", g.local_starts(), 0, kMaxCount);
          r.read("constant_liar", g.constant_liar());
          return std::unique_ptr<Strategy>(std::make_unique<GpStrategy>(space, g));
        }},
       {"nsga2",
        [](const SearchSpace& space, const StrategyOptions& o, OptionReader& r) {
          Nsga2Options n;
          r.read("population", n.population(), 2, kMaxCount);
          r.read("crossover_probability", n.crossover_probability(), 0.0, 1.0);
          r.read("swapping_probability", n.swapping_probability(), 0.0, 1.0);
          r.read("mutation_probability", n.mutation_probability(), 0.0, 1.0);
          r.read("crossover", n.crossover());
          r.read("eta_crossover", n.eta_crossover(), 0.0, kInf);
          r.read("eta_mutation", n.eta_mutation(), 0.0, kInf);
          return std::unique_ptr<Strategy>(std::make_unique<Nsga2Strategy>(space, o.seed(), objectives_of(o), n));
        }},
       {"cmaes",
        [](const SearchSpace& space, const StrategyOptions& o, OptionReader& r) {
          one_objective("cmaes", o);
          CmaEsOptions c;
          r.read("population", c.population(), 0, kMaxCount);
          r.read("sigma", c.sigma(), 0.0, 1.0);
          r.read("restarts", c.restarts());
          r.read("separable_above", c.separable_above(), 1, kMaxCount);
          return std::unique_ptr<Strategy>(std::make_unique<CmaEsStrategy>(space, o.seed(), o.maximize(), c));
        }},
       {"pbt",
        [](const SearchSpace& space, const StrategyOptions& o, OptionReader& r) {
          one_objective("pbt", o);
          PbtOptions p;
          r.read("population", p.population(), 2, 4096);
          r.read("interval", p.interval());
          r.read("quantile", p.quantile(), 0.0, 0.5);
          p.perturb(read_factors(r, "perturb", p.perturb()));
          r.read("resample_probability", p.resample_probability());
          return std::unique_ptr<Strategy>(
              std::make_unique<PopulationBasedTraining>(space, o.seed(), o.maximize(), std::move(p)));
        }},
       {"evolution", [](const SearchSpace& space, const StrategyOptions& o,
                        OptionReader& r) { return make_evolution("evolution", space, o, r, EvolutionOptions()); }},
       {"regularized_evolution", [](const SearchSpace& space, const StrategyOptions& o, OptionReader& r) {
          return make_evolution("regularized_evolution", space, o, r,
                                EvolutionOptions().aging(true).population(100).sample_size(25).mutation_prob(0.05));
        }}});
  return strategies;
}

using Engines = Registry<std::shared_ptr<TrialTable>, const EngineTrial&, OptionReader&>;

const TrialFunction& function_of(const std::string& engine, const EngineTrial& trial) {
  if (!trial.function) throw std::invalid_argument("engine " + engine + " runs a trial function, and none was given");
  return trial.function;
}

const Engines& engine_registry() {
  static const Engines table("engine", Engines::Order::kRegistration,
                             {
                                 {"sequential",
                                  [](const EngineTrial& t, OptionReader&) -> std::shared_ptr<TrialTable> {
                                    return std::make_shared<SequentialEngine>(function_of("sequential", t));
                                  }},
                                 {"thread_pool",
                                  [](const EngineTrial& t, OptionReader& o) -> std::shared_ptr<TrialTable> {
                                    int workers = 1;
                                    o.read("workers", workers, 1, 4096);
                                    return std::make_shared<ThreadPoolEngine>(function_of("thread_pool", t), workers);
                                  }},
                                 {"process",
                                  [](const EngineTrial& t, OptionReader& o) -> std::shared_ptr<TrialTable> {
                                    if (t.command.empty())
                                      throw std::invalid_argument("engine process runs a command, and none was given");
                                    ProcessEngineOptions p;
                                    p.command(t.command);
                                    o.read("workers", p.workers(), 1, 4096);
                                    o.read("timeout_s", p.timeout_s());
                                    o.read("kill_grace_s", p.kill_grace_s());
                                    std::string log_dir;
                                    o.read("log_dir", log_dir);
                                    if (!log_dir.empty()) p.log_dir(log_dir);
                                    return std::make_shared<ProcessEngine>(p);
                                  }},
                             });
  return table;
}

const ConfiguredRegistry<Middleware>& middleware_registry() {
  using R = OptionReader;
  static const ConfiguredRegistry<Middleware> table("middleware", ConfiguredRegistry<Middleware>::Order::kRegistration,
                                                    {
                                                        {"deduplication",
                                                         [](R& o) {
                                                           DeduplicationOptions d;
                                                           o.read("action", d.action());
                                                           return std::make_shared<Deduplication>(d);
                                                         }},
                                                        {"failure_handler",
                                                         [](R& o) {
                                                           FailureHandlerOptions f;
                                                           o.read("retries", f.retries(), 0, 1000);
                                                           o.read("failure_metric", f.failure_metric());
                                                           return std::make_shared<FailureHandler>(f);
                                                         }},
                                                        {"median_stop",
                                                         [](R& o) {
                                                           MedianStopOptions m;
                                                           o.read("maximize", m.maximize());
                                                           o.read("warmup_trials", m.warmup_trials(), 0, 1000000);
                                                           o.read("warmup_steps", m.warmup_steps());
                                                           return std::make_shared<MedianStop>(m);
                                                         }},
                                                        {"asha",
                                                         [](R& o) {
                                                           AshaOptions a;
                                                           o.read("maximize", a.maximize());
                                                           o.read("min_step", a.min_step());
                                                           o.read("reduction_factor", a.reduction_factor(), 2, 1000);
                                                           o.read("brackets", a.brackets(), 1, 64);
                                                           return std::make_shared<Asha>(a);
                                                         }},
                                                        {"budget",
                                                         [](R& o) {
                                                           BudgetOptions b;
                                                           o.read("max_trials", b.max_trials());
                                                           o.read("max_wall_s", b.max_wall_s());
                                                           o.read("max_trial_seconds", b.max_trial_seconds());
                                                           return std::make_shared<Budget>(b);
                                                         }},
                                                    });
  return table;
}

}  // namespace

std::vector<std::string> strategy_names() { return strategy_registry().names(); }

std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space, StrategyOptions options) {
  OptionReader reader("strategy " + name, options.settings());
  auto strategy = strategy_registry().make(name, space, options, reader);
  reader.finish();
  return strategy;
}

std::shared_ptr<TrialTable> make_engine(const std::string& name, const EngineTrial& trial,
                                        const nlohmann::json& options) {
  const Engines& engines = engine_registry();
  if (!engines.contains(name)) throw std::invalid_argument(unknown_name("engine", name, engines.names()));
  OptionReader reader("engine " + name, options);
  std::shared_ptr<TrialTable> engine = engines.make(name, trial, reader);
  reader.finish();
  return engine;
}

std::vector<std::string> engine_names() { return engine_registry().names(); }

std::shared_ptr<Middleware> make_middleware(const std::string& name, const nlohmann::json& options) {
  return make_configured(middleware_registry(), name, options);
}

std::vector<std::string> middleware_names() { return middleware_registry().names(); }

}  // namespace baton
