// baton: train models and run searches from the command line.
//
//   baton train recipes/fashion_mnist.yaml --set max_duration=1ep --run-dir runs/quick
//   baton eval recipes/fashion_mnist.yaml --load runs/quick/model.pt
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include <c10/util/Exception.h>
#include <torch/version.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "baton/core/device.h"
#include "baton/core/options.h"
#include "baton/io/file.h"
#include "baton/io/text.h"
#include "baton/train/checkpoint.h"
#include "baton/train/ranks.h"
#include "baton/train/recipe.h"
#include "baton/train/threads.h"
#include "baton/train/trainer.h"
#include "baton/version.h"
#include "commands.h"

namespace {

// "baton: ", or "baton: rank R: " in a job of several ranks (mpirun, srun), MPI started or not.
std::string prefix() {
  return baton::launcher_size() > 1 ? "baton: rank " + std::to_string(baton::launcher_rank()) + ": " : "baton: ";
}

// A rank of a data-parallel job that fails ends the whole job: the others would wait for it.
int failed(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (baton::data_parallel_active()) baton::abort_all_ranks(code);
  return code;
}

int run(CLI::App& app, int argc, char** argv);

// An error's text as one line: its first (a library's message may run on for many), its control
// characters written out. baton's own errors are one line already: a name with a line break in it
// is written out whole (one_line) instead.
std::string first_line(const std::string& what) { return baton::one_line(what.substr(0, what.find('\n')), 2000); }

// "0.1.0 (LibTorch 2.11.0 with CUDA, 1 GPU)": what this build can train on (and with which BLAS
// kernels where LibTorch's BLAS is OpenBLAS: "0.1.0 (LibTorch 1.13.0, CPU only, OpenBLAS SkylakeX kernels)").
std::string version() {
  const std::string devices =
      baton::cuda_built() ? " with CUDA, " + std::to_string(baton::cuda_device_count()) + " GPU(s)" : ", CPU only";
  const std::string blas = baton::blas_kernels().empty() ? "" : ", " + baton::blas_kernels() + " kernels";
  return std::string(BATON_VERSION_STRING) + " (LibTorch " + TORCH_VERSION + devices + blas + ")";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"baton: train LibTorch models with composable algorithms and callbacks"};
  app.set_version_flag("--version", version);
  app.require_subcommand(1);
  baton::cli::add_train(app);
  baton::cli::add_eval(app);
  baton::cli::add_predict(app);
  baton::cli::add_checkpoint(app);
  baton::cli::add_export(app);
  baton::cli::add_plot(app);
  baton::cli::add_search(app);
  baton::cli::add_dashboard(app);
  baton::cli::add_tokenize(app);
  baton::cli::add_generate(app);
  baton::cli::add_summary(app);
  baton::cli::add_mlflow(app);
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      std::fprintf(stderr, "baton: %s\n", baton::unknown_name("command", argv[1], names).c_str());
      return baton::cli::kBadInput;
    }
  }
  return run(app, argc, argv);
}

namespace {

int run(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a subcommand's own exit code (a run stopped by a signal: 128 + signal)
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line, like every other error: what was wrong, and where the usage is.
    const std::string command = argc > 1 && argv[1][0] != '-' ? std::string(argv[1]) + " " : "";
    std::fprintf(stderr, "%s%s (baton %s--help)\n", prefix().c_str(), e.what(), command.c_str());
    return baton::cli::kBadInput;
  } catch (const baton::RecipeError& e) {
    std::fprintf(stderr, "%s%s\n", prefix().c_str(), baton::one_line(e.what(), 2000).c_str());
    return failed(baton::cli::kBadInput);
  } catch (const baton::CheckpointError& e) {
    std::fprintf(stderr, "%s%s\n", prefix().c_str(), baton::one_line(e.what(), 2000).c_str());
    return failed(baton::cli::kBadInput);
  } catch (
      const baton::FileError& e) {  // a file given that is not one, too large, or a write target that is not a file
    std::fprintf(stderr, "%s%s\n", prefix().c_str(), baton::one_line(e.what(), 2000).c_str());
    return failed(baton::cli::kBadInput);
  } catch (const std::invalid_argument& e) {  // a value the library refused: bad input, named by the message
    std::fprintf(stderr, "%s%s\n", prefix().c_str(), baton::one_line(e.what(), 2000).c_str());
    return failed(baton::cli::kBadInput);
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "%s%s\n", prefix().c_str(), first_line(e.what_without_backtrace()).c_str());
    return failed(baton::cli::kRunFailed);
  } catch (const nlohmann::json::exception&) {  // its text is the library's, not a user's
    std::fprintf(stderr,
                 "%sa JSON document baton wrote or read is not what it expects (a bug: please report it "
                 "with the command)\n",
                 prefix().c_str());
    return failed(baton::cli::kRunFailed);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "%sout of memory (a size from the input, or the model and batch, too large for this "
                 "machine)\n",
                 prefix().c_str());
    return failed(baton::cli::kRunFailed);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s%s\n", prefix().c_str(), first_line(e.what()).c_str());
    return failed(baton::cli::kRunFailed);
  }
  return 0;
}

}  // namespace
