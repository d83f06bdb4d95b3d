// The baton command line: one function per subcommand (apps/baton/<name>.cpp).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace baton {
struct TrainingRun;
}  // namespace baton

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace baton::cli {

// Exit codes: 0 done, 1 the run failed (data, training), 2 bad usage or recipe.
inline constexpr int kRunFailed = 1;
inline constexpr int kBadInput = 2;

void add_train(CLI::App& app);
void add_eval(CLI::App& app);
void add_predict(CLI::App& app);
void add_checkpoint(CLI::App& app);
void add_export(CLI::App& app);
void add_plot(CLI::App& app);
void add_search(CLI::App& app);  // search and trials

// --device DEVICE on a subcommand: where it runs (auto, cpu, cuda, cuda:N); default: the recipe's.
void add_device_option(CLI::App* cmd, std::string& device);
// `sets` with device=DEVICE added when `device` is given. Throws RecipeError naming --device when
// this machine cannot run there.
std::vector<std::string> with_device(std::vector<std::string> sets, const std::string& device);

// Loads weights written by baton train into the run's model; a clear error when they do not fit.
void load_weights(TrainingRun& run, const std::string& path);
void load_weights(torch::nn::Module& module, const std::string& path);

}  // namespace baton::cli
