// The baton command line: one function per subcommand (apps/baton/<name>.cpp).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace baton {
struct ModelSummary;
struct TrainingRun;
class Trainer;
class TrainerOptions;
class Experiment;
class ExperimentOptions;
class FusedData;
struct ExperimentResult;
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
void add_search(CLI::App& app);  // search, trials and nas export
void add_dashboard(CLI::App& app);
void add_tokenize(CLI::App& app);
void add_generate(CLI::App& app);
void add_summary(CLI::App& app);
void add_mlflow(CLI::App& app);  // mlflow sync

// A number option's check: a finite number from `least` to `most` (CLI11's Range lets "nan" through).
CLI::Validator finite_between(double least, double most);

// --device DEVICE on a subcommand: where it runs (auto, cpu, cuda, cuda:N); default: the recipe's.
void add_device_option(CLI::App* cmd, std::string& device);

}  // namespace baton::cli
