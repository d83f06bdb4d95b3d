#include "baton/train/checkpoint_saver.h"

#include <unistd.h>
#include <memory>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

#include "baton/core/state.h"
#include "baton/io/file.h"
#include "baton/train/checkpoint.h"
#include "train/sharded_checkpoint.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

std::string fill(std::string pattern, const State& state) {
  auto replace = [&](const std::string& key, const std::string& value) {
    for (auto at = pattern.find(key); at != std::string::npos; at = pattern.find(key, at + value.size())) {
      pattern.replace(at, key.size(), value);
    }
  };
  replace("{epoch}", std::to_string(state.timestamp.epoch()));
  replace("{batch}", std::to_string(state.timestamp.batch()));
  replace("{run_name}", state.run_name);
  return pattern;
}

struct CheckpointFileAt {
  fs::path path;
  fs::file_time_type written;
};

// Whether `name` is one that `pattern` makes: {epoch} and {batch} are whole numbers, {run_name}
// any name.
bool made_by(std::string_view name, std::string_view pattern) {
  if (pattern.empty()) return name.empty();
  for (const char* number : {"{epoch}", "{batch}"}) {
    if (pattern.rfind(number, 0) != 0) continue;
    const std::string_view rest = pattern.substr(std::strlen(number));
    for (std::size_t k = 0; k < name.size() && std::isdigit(static_cast<unsigned char>(name[k])); ++k) {
      if (made_by(name.substr(k + 1), rest)) return true;
    }
    return false;
  }
  if (pattern.rfind("{run_name}", 0) == 0) {
    for (std::size_t k = 1; k <= name.size(); ++k) {
      if (made_by(name.substr(k), pattern.substr(10))) return true;
    }
    return false;
  }
  return !name.empty() && name.front() == pattern.front() && made_by(name.substr(1), pattern.substr(1));
}

// The checkpoints of `folder`: files its save_filename `pattern` makes (and *.ckpt, the default's);
// not the saver's hidden temporary files; `latest` when it is a copy rather than the link.
std::vector<CheckpointFileAt> checkpoint_files(const std::string& folder, const std::string& pattern) {
  std::vector<CheckpointFileAt> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const fs::path& path = entry.path();
    const std::string name = path.filename().string();
    if (name.empty() || name.front() == '.' || !entry.is_regular_file(ec)) continue;
    if (name == kBestCheckpoint && entry.is_symlink(ec)) continue;  // the link to the best, not a file
    const bool copied_latest = name == "latest" && !entry.is_symlink(ec);
    const bool made = name != "latest" && (path.extension() == ".ckpt" || made_by(name, pattern));
    if (!made && !copied_latest) continue;
    found.push_back({path, entry.last_write_time(ec)});
  }
  return found;
}

// Of the files written at `since` or later, the good one of the latest batch (then epoch: the
// saver writes a batch again at an epoch's end); what could not be read goes to `unreadable`.
fs::path newest_good(const std::vector<CheckpointFileAt>& files, fs::file_time_type since,
                     std::vector<std::string>& unreadable) {
  fs::path best;
  std::pair<int64_t, int64_t> best_at{-1, -1};
  for (const auto& file : files) {
    if (file.written < since) continue;
    try {
      const nlohmann::json at =  // checked whole, no tensor read
          detail::checked_checkpoint_values(file.path.string()).value("timestamp", nlohmann::json::object());
      const std::pair<int64_t, int64_t> when{at.value("batch", int64_t{0}), at.value("epoch", int64_t{0})};
      if (when > best_at) best_at = when, best = file.path;
    } catch (const CheckpointError& e) {
      unreadable.push_back(e.what());
    }
  }
  return best;
}

}  // namespace

std::vector<std::string> checkpoint_names(const std::string& folder, const std::string& filename_pattern) {
  std::vector<std::string> names;
  for (const auto& f : checkpoint_files(folder, filename_pattern)) {
    if (f.path.filename() != "latest") names.push_back(f.path.filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// Points `folder`/`name` (a relative symlink) at `file` atomically: a new link renamed over the old.
void point_link_at(const std::string& folder, const std::string& name, const std::string& file) {
  const fs::path link = fs::path(folder) / name;
  const fs::path tmp = fs::path(folder) / ("." + name + ".tmp." + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_symlink(fs::path(file).filename(), tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) throw CheckpointError(link.string() + ": cannot point it at " + file + " (" + ec.message() + ")");
}

}  // namespace

void point_latest_at(const std::string& folder, const std::string& file) { point_link_at(folder, "latest", file); }

// Where `latest` points, unless a checkpoint was written after it (a run killed between renaming a
// checkpoint into place and moving the link): resuming from that one, it is never written a second
// time. Only those files are read; all of them when `latest` is missing or damaged.
std::string find_resumable_checkpoint(const std::string& folder, const std::string& filename_pattern) {
  std::error_code ec;
  if (!fs::exists(folder, ec)) return "";
  const fs::path latest = fs::path(folder) / "latest";
  const fs::path linked = fs::is_symlink(latest, ec) ? fs::read_symlink(latest, ec).filename() : fs::path();
  const std::vector<CheckpointFileAt> files = checkpoint_files(folder, filename_pattern);
  std::vector<std::string> unreadable;
  fs::path best;
  for (const auto& file : files) {
    if (file.path.filename() == linked) best = newest_good(files, file.written, unreadable);
  }
  if (best.empty()) {
    unreadable.clear();
    best = newest_good(files, fs::file_time_type::min(), unreadable);
  }
  if (best.empty() && !unreadable.empty()) {
    std::string which;
    for (std::size_t i = 0; i < unreadable.size() && i < 3; ++i) which += (i ? "; " : "") + unreadable[i];
    if (unreadable.size() > 3) which += "; and " + std::to_string(unreadable.size() - 3) + " more";
    throw CheckpointError(folder + ": no checkpoint can be resumed from (" + which +
                          "); starting over would overwrite them: baton train --restart moves them aside first");
  }
  if (best.empty()) return "";
  if (!unreadable.empty()) {
    spdlog::warn("{}; resuming from the newest good checkpoint, {}", unreadable[0], best.string());
  } else if (!linked.empty() && best.filename() != linked) {
    spdlog::info(
        "{}: resuming from {}, written after the one 'latest' points at (the run stopped before it moved the link)",
        folder, best.string());
  }
  return best.filename() == linked ? latest.string() : best.string();
}

void check_checkpoint_filename(const std::string& filename) {
  auto refuse = [&](const std::string& why) { throw std::invalid_argument("'" + filename + "': " + why); };
  if (filename.empty()) refuse("empty; a name such as ep{epoch}-ba{batch}.ckpt");
  if (filename == "latest") refuse("'latest' is the link to the newest checkpoint; name the files otherwise");
  if (filename == kBestCheckpoint) refuse("'best.ckpt' is the link to the best checkpoint; name the files otherwise");
  if (filename.find('/') != std::string::npos || filename == "..") {
    refuse(
        "a checkpoint is written in the checkpoint folder; set save_folder for another folder, and a name "
        "without '/'");
  }
  if (filename.front() == '.') refuse("a name starting with '.' is hidden (the saver's temporary files are)");
}

struct CheckpointSaver::Impl {
  CheckpointSaverOptions options_;
  Snapshot snapshot_;
  Meta meta_;
  std::future<void> pending_;
  std::vector<std::string> written_;
  std::pair<int64_t, int64_t> last_saved_{-1, -1};
  bool last_save_ranked_ = false;
  std::vector<Ranked> ranked_;
  int64_t order_ = 0;
  int64_t monitor_evaluated_at_ = -1;
  std::string best_;
  ShardWriter shard_writer_;
};

void CheckpointSaver::set_shard_writer(ShardWriter writer) { impl_->shard_writer_ = std::move(writer); }

const std::vector<std::string>& CheckpointSaver::written() const { return impl_->written_; }

CheckpointSaver::CheckpointSaver(CheckpointSaverOptions options, Snapshot snapshot, Meta meta)
    : impl_(std::make_unique<Impl>()) {
  impl_->options_ = std::move(options);
  impl_->snapshot_ = std::move(snapshot);
  impl_->meta_ = std::move(meta);
  if (!impl_->options_.write()) return;
  try {
    check_checkpoint_filename(impl_->options_.filename());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("save_filename ") + e.what());
  }
  std::error_code ec;
  fs::create_directories(impl_->options_.folder(), ec);
  if (ec)
    throw CheckpointError(impl_->options_.folder() + ": cannot create the checkpoint folder (" + ec.message() + ")");
  if (::access(impl_->options_.folder().c_str(), W_OK) != 0) {
    throw CheckpointError(impl_->options_.folder() + ": the checkpoint folder is not writable (" +
                          std::strerror(errno) + ")");
  }
  if (const int n = remove_stale_temporaries(impl_->options_.folder()); n > 0) {
    spdlog::info("{}: removed {} temporary file(s) that a stopped run left", impl_->options_.folder(), n);
  }
  if (const int n = detail::remove_orphan_shards(impl_->options_.folder()); n > 0) {
    spdlog::info("{}: removed {} rank file(s) of a checkpoint that a stopped run did not finish",
                 impl_->options_.folder(), n);
  }
}

void CheckpointSaver::adopt_existing() {
  if (!impl_->options_.write()) return;
  std::vector<CheckpointFileAt> files = checkpoint_files(impl_->options_.folder(), impl_->options_.filename());
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.written < b.written; });
  std::vector<std::string> paths;
  for (const auto& f : files) {
    if (f.path.filename() != "latest") paths.push_back(f.path.string());
  }
  for (const auto& p : impl_->written_) {
    if (std::find(paths.begin(), paths.end(), p) == paths.end()) paths.push_back(p);
  }
  impl_->written_ = std::move(paths);
  if (impl_->options_.top_k() <= 0) return;
  impl_->ranked_.clear();
  for (const auto& path : impl_->written_) {  // oldest first: the order they were written
    try {
      const nlohmann::json monitor = read_checkpoint_meta(path).value("monitor", nlohmann::json::object());
      if (monitor.value("key", "") == impl_->options_.monitor() && monitor.contains("value") &&
          monitor["value"].is_number()) {
        impl_->ranked_.push_back(
            Ranked{path, monitor["value"].get<double>(), monitor.value("batch", int64_t{-1}), impl_->order_++});
      }
    } catch (const CheckpointError& e) {  // unreadable: not ranked (deleted at the next save unless latest)
      spdlog::warn("{}", e.what());
    }
  }
  const fs::path best = fs::path(impl_->options_.folder()) / kBestCheckpoint;
  std::error_code ec;
  impl_->best_ = fs::is_symlink(best, ec)
                     ? (fs::path(impl_->options_.folder()) / fs::read_symlink(best, ec).filename()).string()
                     : "";
  // A run stopped between writing a better checkpoint and moving the link: the link moves now.
  if (const auto sorted = ranked(); !sorted.empty() && sorted.front().first != impl_->best_) {
    impl_->best_ = sorted.front().first;
    point_link_at(impl_->options_.folder(), kBestCheckpoint, impl_->best_);
  }
}

std::vector<std::pair<std::string, double>> CheckpointSaver::ranked() const {
  std::vector<Ranked> sorted = impl_->ranked_;
  const bool greater = impl_->options_.greater_is_better();
  std::sort(sorted.begin(), sorted.end(), [&](const Ranked& a, const Ranked& b) {
    if (a.value != b.value) return greater ? a.value > b.value : a.value < b.value;
    return a.order > b.order;  // a tie: the newer weights first
  });
  std::vector<std::pair<std::string, double>> out;
  out.reserve(sorted.size());
  for (const auto& r : sorted) out.emplace_back(r.path, r.value);
  return out;
}

// The top_k ranked checkpoints with `path` (ranked when it has a value) and `path` itself are kept;
// every other file this saver manages is returned to be deleted once the links have moved.
std::vector<std::string> CheckpointSaver::keep_top_k(const std::string& path, std::optional<double> value,
                                                     int64_t batch) {
  // A file written again, or the same weights written again at an epoch's end, replaces its entry.
  std::erase_if(impl_->ranked_, [&](const Ranked& r) { return r.path == path || (value && r.batch == batch); });
  if (value) impl_->ranked_.push_back(Ranked{path, *value, batch, impl_->order_++});
  std::vector<std::pair<std::string, double>> sorted = ranked();
  if (sorted.size() > static_cast<std::size_t>(impl_->options_.top_k()))
    sorted.resize(static_cast<std::size_t>(impl_->options_.top_k()));
  std::erase_if(impl_->ranked_, [&](const Ranked& r) {
    return std::none_of(sorted.begin(), sorted.end(), [&](const auto& kept) { return kept.first == r.path; });
  });
  std::vector<std::string> doomed;
  std::vector<std::string> kept;
  for (const auto& p : impl_->written_) {
    const bool ranked_now =
        std::any_of(impl_->ranked_.begin(), impl_->ranked_.end(), [&](const Ranked& r) { return r.path == p; });
    (ranked_now || p == path ? kept : doomed).push_back(p);
  }
  impl_->written_ = std::move(kept);
  return doomed;
}

CheckpointSaver::~CheckpointSaver() {
  try {
    wait();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
  }
}

void CheckpointSaver::wait() {
  if (impl_->pending_.valid()) impl_->pending_.get();
}

std::string CheckpointSaver::save(const State& state) {
  wait();
  StateDict snapshot = impl_->snapshot_();
  // Ranked (top_k) only with a value of these weights: the monitor's set evaluated at this batch.
  std::optional<double> value;
  if (impl_->options_.top_k() > 0 && impl_->monitor_evaluated_at_ == state.timestamp.batch()) {
    value = state.eval_metric(impl_->options_.monitor());
    if (value && !std::isfinite(*value)) value.reset();
  }
  impl_->last_save_ranked_ = value.has_value();
  const std::string name = fill(impl_->options_.filename(), state);
  check_checkpoint_filename(name);  // {run_name} may make a name the pattern did not
  std::string path = (fs::path(impl_->options_.folder()) / name).string();
  impl_->last_saved_ = {state.timestamp.epoch(), state.timestamp.batch()};
  // Every rank's file of the optimizer's state before the index (a kill between them leaves the
  // previous checkpoint the latest).
  if (impl_->shard_writer_) snapshot.values[detail::kShardedStateKey] = impl_->shard_writer_(path);
  if (!impl_->options_.write()) return "";  // the writer's decisions, made from the same state
  nlohmann::json meta = impl_->meta_ ? impl_->meta_() : nlohmann::json::object();
  if (value) {
    meta["monitor"] = {{"key", impl_->options_.monitor()}, {"value", *value}, {"batch", state.timestamp.batch()}};
  }
  impl_->written_.erase(std::remove(impl_->written_.begin(), impl_->written_.end(), path), impl_->written_.end());
  impl_->written_.push_back(path);
  std::vector<std::string> doomed;
  std::string best;  // where best.ckpt is to point, when that changes
  if (impl_->options_.top_k() > 0) {
    doomed = keep_top_k(path, value, state.timestamp.batch());
    const auto sorted = ranked();
    if (!sorted.empty() && sorted.front().first != impl_->best_) best = impl_->best_ = sorted.front().first;
  } else if (impl_->options_.num_checkpoints_to_keep() >= 0) {
    while (impl_->written_.size() > static_cast<std::size_t>(std::max(1, impl_->options_.num_checkpoints_to_keep()))) {
      doomed.push_back(impl_->written_.front());
      impl_->written_.erase(impl_->written_.begin());
    }
  }
  // The file, then the links, then what they no longer need: a kill at any point leaves latest and
  // best.ckpt each naming one whole checkpoint.
  impl_->pending_ = std::async(std::launch::async, [this, path, best, snapshot = std::move(snapshot),
                                                    meta = std::move(meta), doomed = std::move(doomed)] {
    write_checkpoint(path, snapshot, meta);
    point_latest_at(impl_->options_.folder(), path);
    if (!best.empty()) point_link_at(impl_->options_.folder(), kBestCheckpoint, best);
    for (const auto& old : doomed) detail::remove_checkpoint(old);  // its ranks' files too
  });
  return path;
}

void CheckpointSaver::eval_end(State& state, Logger&) {
  const auto slash = impl_->options_.monitor().rfind('/');
  if (impl_->options_.top_k() > 0 && slash != std::string::npos &&
      state.dataloader_label == impl_->options_.monitor().substr(0, slash)) {
    impl_->monitor_evaluated_at_ = state.timestamp.batch();
  }
}

void CheckpointSaver::batch_checkpoint(State& state, Logger&) {
  // With top_k: after each evaluation of the monitor's set, so that every value has its weights.
  if (rank_now(state)) {
    save(state);
    return;
  }
  const Time& every = impl_->options_.interval();
  if (every.value() <= 0) return;
  if (every.unit() == TimeUnit::kBatch && state.timestamp.batch() % every.count() == 0) save(state);
  if (every.unit() == TimeUnit::kSample) {
    const int64_t n = every.count();
    const int64_t samples = state.batch_samples > 0 ? state.batch_samples : state.batch.size();  // every rank's
    if (state.timestamp.sample() / n > (state.timestamp.sample() - samples) / n) save(state);
  }
}

void CheckpointSaver::epoch_checkpoint(State& state, Logger&) {
  if (rank_now(state)) {
    save(state);
    return;
  }
  const Time& every = impl_->options_.interval();
  if (every.unit() == TimeUnit::kEpoch && every.count() > 0 && state.timestamp.epoch() % every.count() == 0) {
    if (!saved_now(state)) save(state);
  }
}

// top_k: the monitor's set was evaluated at this batch, and these weights have no ranked checkpoint.
bool CheckpointSaver::rank_now(const State& state) const {
  return impl_->options_.top_k() > 0 && impl_->monitor_evaluated_at_ == state.timestamp.batch() &&
         !(saved_now(state) && impl_->last_save_ranked_);
}

bool CheckpointSaver::saved_now(const State& state) const {
  return impl_->last_saved_ == std::pair<int64_t, int64_t>{state.timestamp.epoch(), state.timestamp.batch()};
}

void CheckpointSaver::fit_end(State& state, Logger&) {
  if (!saved_now(state) || rank_now(state)) save(state);
  wait();
}

void CheckpointSaver::close(State&, Logger&) { wait(); }

}  // namespace baton
