// RunFolder: claim, prepare (resume, start over, refuse), finish (model.pt, summary.json).
#include "baton/train/run_folder.h"

#include <algorithm>
#include <ctime>
#include <sstream>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "baton/core/options.h"
#include "baton/io/file.h"
#include "baton/io/write.h"
#include "baton/train/checkpoint_saver.h"
#include "baton/train/recipe_file.h"
#include "baton/train/trainer.h"

namespace baton {
namespace fs = std::filesystem;

struct RunFolder::Impl {
  fs::path dir;
  bool created = false;  // the folder did not exist before the claim
  std::unique_ptr<FileLock> lock;
};

namespace {

std::vector<std::string> present(const fs::path& folder, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& name : names) {
    if (fs::exists(folder / name, ec) || fs::is_symlink(folder / name, ec)) out.push_back(name);
  }
  return out;
}

// The files of `folder` that are not this run's checkpoints: another save_filename's, or unreadable.
std::vector<std::string> other_files(const fs::path& folder) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name != "latest" && !name.starts_with(".")) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Why --autoresume cannot start over in `dir` ("" : it can): what starting over would replace.
std::string why_not_start_over(const fs::path& dir, const RunFolder::Prepare& how) {
  std::error_code ec;
  const RunDir files(dir);
  if (fs::exists(files.summary(), ec) || fs::exists(files.model(), ec)) return "a finished run";
  if (const auto others = how.save_folder.empty() ? std::vector<std::string>{} : other_files(how.save_folder);
      !others.empty()) {
    return "checkpoints this recipe's save_filename '" + how.save_filename + "' does not make (" + join_names(others) +
           ")";
  }
  if (fs::is_regular_file(files.recipe(), ec) &&
      read_file(files.recipe().string(), {.what = "the run's recipe"}) != how.recipe_yaml) {
    return "the run of another recipe (its recipe.yaml differs)";
  }
  return "";
}

// --autoresume in a folder with a run but no checkpoint of this recipe to resume from: a run killed
// before its first checkpoint (the same recipe) starts over with its files moved aside; a run this
// one does not continue (finished, another save_filename or model, another recipe) is refused.
void start_over_or_refuse(const fs::path& dir, const std::vector<std::string>& previous,
                          const RunFolder::Prepare& how) {
  if (!how.save_folder.empty() && !find_resumable_checkpoint(how.save_folder, how.save_filename).empty()) return;
  if (const std::string why = why_not_start_over(dir, how); !why.empty()) {
    throw RecipeError(dir.string() + ": --autoresume has nothing to resume here: the folder holds " + why +
                      ", and starting over would replace its " + join_names(previous) +
                      "; --overwrite starts over (moving them aside), or give another --run-dir");
  }
  std::fprintf(how.out,
               "baton train: no checkpoint in %s to resume from: starting over (the files there moved to %s)\n",
               dir.string().c_str(), move_aside(dir, previous).string().c_str());
}

}  // namespace

fs::path move_aside(const fs::path& folder, const std::vector<std::string>& names) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof stamp, "replaced-%Y%m%d-%H%M%S", &local);
  fs::path aside = folder / stamp;
  for (int n = 2; fs::exists(aside); ++n) aside = folder / (std::string(stamp) + "-" + std::to_string(n));
  fs::create_directories(aside);
  for (const auto& name : names) fs::rename(folder / name, aside / name);
  return aside;
}

void RunFolder::check_against_inputs(const fs::path& dir, const std::vector<std::string>& inputs) {
  std::error_code ec;
  for (const std::string& input : inputs) {
    const bool folder = fs::is_directory(input, ec);
    if (resolves_inside(dir.string(), input) && (folder || fs::equivalent(dir, input, ec))) {
      throw RecipeError(dir.string() + ": the run folder is " +
                        (folder && !fs::equivalent(dir, input, ec) ? "inside " : "") + input +
                        ", which the recipe reads; give another --run-dir");
    }
  }
}

RunFolder::RunFolder() : impl_(std::make_unique<Impl>()) {}
RunFolder::RunFolder(RunFolder&&) noexcept = default;
RunFolder& RunFolder::operator=(RunFolder&&) noexcept = default;
RunFolder::~RunFolder() = default;

RunFolder RunFolder::claim(const fs::path& dir) {
  RunFolder out;
  Impl& self = *out.impl_;
  self.dir = dir;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw RecipeError(dir.string() + ": " + file_kind(dir.string()) +
                      " is there, not a folder; give another --run-dir");
  }
  self.created = !fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": cannot create the run directory (" + ec.message() + ")");
  self.lock = std::make_unique<FileLock>(RunDir(dir).lock().string());
  if (!self.lock->held()) {
    const long pid = self.lock->holder();
    throw RecipeError(dir.string() + ": another baton" + (pid > 0 ? " (pid " + std::to_string(pid) + ")" : "") +
                      " is training in this run directory; wait for it to end or stop it, or give another --run-dir");
  }
  remove_stale_temporaries(dir.string());
  return out;
}

void RunFolder::prepare(const Prepare& how) {
  const fs::path& dir = impl_->dir;
  const std::vector<std::string> previous = present(dir, RunDir::run_files());
  if (previous.empty()) return;
  switch (how.existing) {
    case Existing::kStartOver: {
      std::fprintf(how.out, "baton train: %s's previous run moved to %s\n", dir.string().c_str(),
                   move_aside(dir, previous).string().c_str());
      // Checkpoints kept elsewhere (save_folder) are moved aside there, so the new run cannot resume them.
      const fs::path save = how.save_folder;
      std::vector<std::string> files = present(save, {"latest"});
      for (const auto& name : checkpoint_names(save.string(), how.save_filename)) files.push_back(name);
      if (!save.empty() && !files.empty()) move_aside(save, files);
      return;
    }
    case Existing::kResume: return start_over_or_refuse(dir, previous, how);
    case Existing::kRefuse: break;
  }
  throw RecipeError(dir.string() + ": a run is already there (" + join_names(previous) +
                    "); --autoresume continues it, --overwrite starts over (moving its files aside), or give "
                    "another --run-dir");
}

void RunFolder::release_refused() {
  if (!impl_->lock) return;
  impl_->lock.reset();
  if (!impl_->created) return;
  std::error_code ec;
  baton::remove_tree(impl_->dir, ec);
}

void RunFolder::write_recipe(const std::string& resolved_yaml) const {
  write_file_atomically(files().recipe().string(), resolved_yaml);
}

void RunFolder::write_classes(const std::vector<std::string>& names) const {
  std::string lines;
  for (const auto& name : names) lines += name + "\n";
  write_file_atomically(files().classes().string(), lines);
}

nlohmann::json RunFolder::finish(Trainer& trainer) const {
  {
    // Serialised in memory, then written as checkpoints are: a full disk is an error, not an abort
    // inside LibTorch's writer, and never a half-written model.pt.
    std::ostringstream bytes;
    torch::save(std::dynamic_pointer_cast<torch::nn::Module>(trainer.options().model()), bytes);
    write_file_atomically(files().model().string(), bytes.str());
  }
  const RunSummary& s = trainer.summary();
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [label, values] : trainer.state().eval_metrics) {
    for (const auto& [name, value] : values) metrics[std::string(label).append("/").append(name)] = value;
  }
  if (s.steps > 0) metrics["train/loss"] = s.train_loss;
  const auto memory = [](const MemoryUse& m) {
    return nlohmann::json{{"params_bytes", m.params_bytes},
                          {"grads_bytes", m.grads_bytes},
                          {"optimizer_bytes", m.optimizer_bytes},
                          {"peak_bytes", m.peak_bytes}};
  };
  nlohmann::json per_rank = nlohmann::json::array();
  for (const MemoryUse& m : s.memory_per_rank) per_rank.push_back(memory(m));
  int64_t params = 0, trainable = 0;  // the model's elements: all, and those the optimizer changes
  for (const auto& p : std::dynamic_pointer_cast<torch::nn::Module>(trainer.options().model())->parameters()) {
    params += p.numel();
    trainable += p.requires_grad() ? p.numel() : 0;
  }
  const nlohmann::json summary = {{"metrics", metrics},
                                  {"params", params},
                                  {"trainable_params", trainable},
                                  {"train_s", s.train_s},
                                  {"eval_s", s.eval_s},
                                  {"steps", s.steps},
                                  {"samples", s.samples},
                                  {"samples_per_s", s.samples_per_s()},
                                  {"graph_steps", s.graph_steps},
                                  {"stopped_early", s.stopped_early},
                                  {"memory", memory(s.memory)},
                                  {"memory_per_rank", per_rank}};
  write_file_atomically(files().summary().string(), summary.dump(2) + "\n");
  return metrics;
}

const fs::path& RunFolder::path() const { return impl_->dir; }

bool RunFolder::held() const { return impl_ && impl_->lock != nullptr; }

}  // namespace baton
