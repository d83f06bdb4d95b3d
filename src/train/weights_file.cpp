// Weights files a user names (include/baton/train/weights_file.h): checkpoints, model.pt, safetensors.
#include "baton/train/weights_file.h"

#include <unistd.h>

#include <torch/torch.h>

#include "baton/io/file.h"
#include "baton/models/safetensors.h"
#include "baton/train/recipe_file.h"
#include "baton/train/trainer.h"

namespace baton {
namespace {

// The first bytes of a weights file (a regular file: never a FIFO, which would wait forever).
std::string magic_of(const std::string& path, std::size_t n) {
  ReadableFile file(path, {.what = "the weights", .max_bytes = UINT64_MAX});
  std::string magic(n, '\0');
  const ssize_t got = ::pread(file.fd(), magic.data(), n, 0);
  magic.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return magic;
}

}  // namespace

bool is_checkpoint(const std::string& path) {
  try {
    return magic_of(path, 7) == "BATONCK";
  } catch (const FileError&) {
    return false;
  }
}

std::unique_ptr<Trainer> trainer_with_weights(TrainerOptions options, const std::string& path) {
  options.progress_bar(false).console_log_interval("0ep").eval_interval("0ep");
  check_weights_file(path);
  if (is_checkpoint(path)) {
    // The trainer's own load: the model surgery the checkpoint was saved with, then the weights.
    return std::make_unique<Trainer>(std::move(options.load_path(path).load_weights_only(true)));
  }
  auto trainer = std::make_unique<Trainer>(std::move(options));  // the recipe's surgery at init
  load_weights(*trainer->state().model, path);
  return trainer;
}

void check_weights_file(const std::string& path) {
  std::string magic;
  try {
    magic = magic_of(path, 4);
  } catch (const FileError& e) {
    throw RecipeError(e.what());
  }
  // A checkpoint starts "BATO"; torch::save (model.pt) writes a zip.
  if (magic != "BATO" && magic != std::string("PK\x03\x04", 4) && !is_safetensors(path)) {
    throw RecipeError(path +
                      ": neither a baton checkpoint, a model.pt written by baton train, nor safetensors; give "
                      "RUN_DIR/model.pt, a checkpoint (RUN_DIR/checkpoints/latest) or FILE.safetensors");
  }
}

void load_weights(torch::nn::Module& target, const std::string& path) {
  if (is_safetensors(path)) {
    load_safetensors(target, path);  // its errors name the file and the tensors
    return;
  }
  std::shared_ptr<torch::nn::Module> module(&target, [](torch::nn::Module*) {});  // torch::load takes a pointer
  const auto params = target.parameters();
  const c10::Device device = params.empty() ? c10::Device(c10::kCPU) : params.front().device();
  try {
    torch::load(module, path, device);  // the weights where the model is
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw std::runtime_error(path + ": cannot load the model's weights: " + what.substr(0, what.find('\n')));
  }
}

}  // namespace baton
