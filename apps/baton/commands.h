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
void add_summary(CLI::App& app);
void add_mlflow(CLI::App& app);  // mlflow sync

// A number option's check: a finite number from `least` to `most` (CLI11's Range lets "nan" through).
CLI::Validator finite_between(double least, double most);

// --device DEVICE on a subcommand: where it runs (auto, cpu, cuda, cuda:N); default: the recipe's.
void add_device_option(CLI::App* cmd, std::string& device);
// `sets` with device=DEVICE added when `device` is given. Throws RecipeError naming --device when
// this machine cannot run there.
std::vector<std::string> with_device(std::vector<std::string> sets, const std::string& device);

// baton search --strategy spos (spos.cpp): trains the supernet of the model space `options` search
// (use_model_space made their space), then runs the evolution of inherited-weight evaluations through
// `run` and trains the best again. Throws std::invalid_argument, RecipeError or ExperimentError for
// bad input.
int run_spos_search(ExperimentOptions options,
                    const std::function<int(Experiment&, const ExperimentOptions&, ExperimentResult&)>& run);

// Whether `path` is a baton checkpoint (else, say, a model.pt written with torch::save).
bool is_checkpoint(const std::string& path);
// Throws RecipeError naming `path` unless it opens and is a checkpoint or a model.pt.
void check_weights_file(const std::string& path);
// A trainer of `options` (quiet) whose model holds the weights of `path`: a checkpoint goes
// through the trainer's own load, which first applies the model surgery it was saved with
// (blurpool, squeeze-excite, …); another file (model.pt) is loaded after the options' algorithms
// changed the model at init. Errors name the file.
std::unique_ptr<Trainer> trainer_with_weights(TrainerOptions options, const std::string& path);
// Loads a model.pt (torch::save) into `module`, where its weights are; a clear error when they do
// not fit.
void load_weights(torch::nn::Module& module, const std::string& path);

}  // namespace baton::cli
