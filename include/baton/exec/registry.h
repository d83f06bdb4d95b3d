// The execution engines and the middlewares by name, configured by a mapping of options as every
// named component is (core/registry.h): what a C++ caller or a search's options name. The
// strategies' registry (make_strategy, baton/exec/strategy.h) is beside them in src/exec/registry.cpp.
//
//   auto engine = baton::make_engine("thread_pool", {.function = train_one}, {{"workers", 4}});
//   auto asha = baton::make_middleware("asha", {{"min_step", 2}, {"maximize", false}});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/exec/engine.h"
#include "baton/exec/middleware.h"

namespace baton {

// What an engine runs: a C++ trial function (sequential, thread_pool) or a shell command
// (process, which sets BATON_PARAMETERS and reads the trial protocol).
struct EngineTrial {
  TrialFunction function;
  std::string command;
};

// sequential: the trial function in the caller's thread; thread_pool {workers}; process {workers,
// timeout_s, kill_grace_s, log_dir}. Throws std::invalid_argument for an unknown name or a trial the
// engine cannot run, OptionError for an unknown key or a bad value.
std::shared_ptr<TrialTable> make_engine(const std::string& name, const EngineTrial& trial,
                                        const nlohmann::json& options = nlohmann::json::object());
std::vector<std::string> engine_names();

// deduplication {action}, failure_handler {retries, failure_metric}, median_stop {maximize,
// warmup_trials, warmup_steps}, asha {maximize, min_step, reduction_factor, brackets}, budget
// {max_trials, max_wall_s, max_trial_seconds}: the options of each one's XxxOptions.
std::shared_ptr<Middleware> make_middleware(const std::string& name,
                                            const nlohmann::json& options = nlohmann::json::object());
std::vector<std::string> middleware_names();

}  // namespace baton
