// The weights files a user names to evaluate, predict or export: a baton checkpoint, a model.pt
// that `baton train` wrote (torch::save), or safetensors.
//
//   auto trainer = baton::trainer_with_weights(run.options, "runs/exp1/model.pt");
//   trainer->eval();
#pragma once

#include <memory>
#include <string>

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace baton {

class Trainer;
class TrainerOptions;

// Whether `path` is a baton checkpoint (else, say, a model.pt written with torch::save).
bool is_checkpoint(const std::string& path);
// Throws RecipeError naming `path` unless it opens (a regular file) and is a checkpoint, a model.pt
// or safetensors.
void check_weights_file(const std::string& path);
// A trainer of `options` (quiet, no evaluation while fitting) whose model holds the weights of
// `path`: a checkpoint goes through the trainer's own load, which first applies the model surgery
// it was saved with (blurpool, squeeze-excite, …); another file (model.pt, safetensors) is loaded
// after the options' algorithms changed the model at init. Errors name the file.
std::unique_ptr<Trainer> trainer_with_weights(TrainerOptions options, const std::string& path);
// Loads a model.pt (torch::save) or safetensors into `module`, where its weights are; an error
// naming the file and the tensor when they do not fit.
void load_weights(torch::nn::Module& module, const std::string& path);

}  // namespace baton
