#include "baton/callbacks/registry.h"

#include <functional>
#include <map>

#include "baton/callbacks/monitors.h"
#include "baton/callbacks/stoppers.h"
#include "baton/callbacks/trace_profiler.h"

namespace baton {
namespace {

using Factory = std::function<std::shared_ptr<Callback>(OptionReader&)>;

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> table = {
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
  const auto it = factories().find(name);
  if (it == factories().end()) {
    std::string known;
    for (const auto& n : callback_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown callback '" + name + "' (known: " + known + ")");
  }
  OptionReader reader(name, options);
  std::shared_ptr<Callback> callback;
  try {
    callback = it->second(reader);
  } catch (const OptionError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    const std::string key = what.substr(0, what.find(' '));
    throw OptionError(options.is_object() && options.contains(key) ? key : "", name + ": " + what);
  }
  reader.finish();
  return callback;
}

std::vector<std::string> callback_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories()) names.push_back(name);
  return names;
}

}  // namespace baton
