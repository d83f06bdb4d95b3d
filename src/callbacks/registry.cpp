#include "baton/callbacks/registry.h"

#include <functional>
#include <map>

#include "baton/callbacks/monitors.h"
#include "baton/callbacks/stoppers.h"
#include "baton/callbacks/trace_profiler.h"
#include "baton/core/registry.h"

namespace baton {
namespace {

const ConfiguredRegistry<Callback>& callback_registry() {
  static const ConfiguredRegistry<Callback> table(
      "callback", ConfiguredRegistry<Callback>::Order::kSorted,
      {
          {"threshold_stopper",
           [](OptionReader& o) {
             ThresholdStopperOptions t;
             o.read("monitor", t.monitor());
             o.read("threshold", t.threshold());
             o.read("comparison", t.comparison());
             return std::make_shared<ThresholdStopper>(t);
           }},
          {"early_stopper",
           [](OptionReader& o) {
             EarlyStopperOptions e;
             o.read("monitor", e.monitor());
             o.read("patience", e.patience());
             o.read("min_delta", e.min_delta());
             o.read("comparison", e.comparison());
             o.read("restore_best", e.restore_best());
             return std::make_shared<EarlyStopper>(e);
           }},
          {"speed_monitor",
           [](OptionReader& o) {
             SpeedMonitorOptions s;
             o.read("window_size", s.window_size());
             return std::make_shared<SpeedMonitor>(s);
           }},
          {"lr_monitor", [](OptionReader&) { return std::make_shared<LrMonitor>(); }},
          {"optimizer_monitor",
           [](OptionReader& o) {
             return std::make_shared<OptimizerMonitor>(o.boolean("per_layer", OptimizerMonitor::kDefaultPerLayer));
           }},
          {"memory_monitor",
           [](OptionReader& o) {
             return std::make_shared<MemoryMonitor>(o.integer("interval", MemoryMonitor::kDefaultInterval));
           }},
          {"nan_monitor", [](OptionReader&) { return std::make_shared<NanMonitor>(); }},
          {"runtime_estimator", [](OptionReader&) { return std::make_shared<RuntimeEstimator>(); }},
          {"free_outputs", [](OptionReader&) { return std::make_shared<FreeOutputs>(); }},
          {"profiler",
           [](OptionReader& o) {
             TraceProfilerOptions t;
             o.read("folder", t.folder());
             o.read("skip_first", t.skip_first());
             o.read("wait", t.wait());
             o.read("warmup", t.warmup());
             o.read("active", t.active());
             o.read("repeat", t.repeat());
             return std::make_shared<TraceProfiler>(t);
           }},
      });
  return table;
}

}  // namespace

std::shared_ptr<Callback> make_callback(const std::string& name, const nlohmann::json& options) {
  return make_configured(callback_registry(), name, options);
}

std::shared_ptr<Callback> make_callback(const std::string& name, OptionReader& options) {
  return make_configured(callback_registry(), name, options);
}

std::vector<std::string> callback_names() { return callback_registry().names(); }

}  // namespace baton
