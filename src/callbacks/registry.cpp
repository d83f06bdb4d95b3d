#include "baton/callbacks/registry.h"

#include <functional>
#include <map>

#include "baton/callbacks/monitors.h"
#include "baton/callbacks/stoppers.h"
#include "baton/callbacks/trace_profiler.h"

namespace baton {
namespace {

const Factories<Callback>& callback_factories() {
  static const Factories<Callback> table = {
      {"threshold_stopper",
       [](OptionReader& o) {
         ThresholdStopperOptions t;
         t.monitor = o.text("monitor", t.monitor);
         t.threshold = o.number("threshold", t.threshold);
         t.comparison = o.text("comparison", "");
         return std::make_shared<ThresholdStopper>(t);
       }},
      {"early_stopper",
       [](OptionReader& o) {
         EarlyStopperOptions e;
         e.monitor = o.text("monitor", e.monitor);
         e.patience = o.time("patience", e.patience);
         e.min_delta = o.number("min_delta", e.min_delta);
         e.comparison = o.text("comparison", "");
         return std::make_shared<EarlyStopper>(e);
       }},
      {"speed_monitor", [](OptionReader& o) { return std::make_shared<SpeedMonitor>(o.integer("window_size", 100)); }},
      {"lr_monitor", [](OptionReader&) { return std::make_shared<LrMonitor>(); }},
      {"optimizer_monitor",
       [](OptionReader& o) { return std::make_shared<OptimizerMonitor>(o.boolean("per_layer", false)); }},
      {"memory_monitor", [](OptionReader& o) { return std::make_shared<MemoryMonitor>(o.integer("interval", 50)); }},
      {"nan_monitor", [](OptionReader&) { return std::make_shared<NanMonitor>(); }},
      {"runtime_estimator", [](OptionReader&) { return std::make_shared<RuntimeEstimator>(); }},
      {"free_outputs", [](OptionReader&) { return std::make_shared<FreeOutputs>(); }},
      {"profiler",
       [](OptionReader& o) {
         TraceProfilerOptions t;
         t.folder = o.text("folder", t.folder);
         t.skip_first = o.integer("skip_first", t.skip_first);
         t.wait = o.integer("wait", t.wait);
         t.warmup = o.integer("warmup", t.warmup);
         t.active = o.integer("active", t.active);
         t.repeat = o.integer("repeat", t.repeat);
         return std::make_shared<TraceProfiler>(t);
       }},
  };
  return table;
}

}  // namespace

std::shared_ptr<Callback> make_callback(const std::string& name, const nlohmann::json& options) {
  return build_named(callback_factories(), "callback", name, options);
}

std::vector<std::string> callback_names() { return names_of(callback_factories()); }

}  // namespace baton
