#include "baton/exec/registry.h"

#include <filesystem>
#include <optional>
#include <stdexcept>

#include "baton/core/registry.h"
#include "baton/exec/process.h"

namespace baton {
namespace {

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
