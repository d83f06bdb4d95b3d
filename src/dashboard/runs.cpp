#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "baton/io/file.h"
#include "baton/io/run_dir.h"
#include "sources.h"

namespace baton::dashboard {
namespace fs = std::filesystem;
namespace {

// Logged by the speed monitor when an epoch ends: where the epochs are.
constexpr const char* kEpochEnd = "wall_clock/epoch_s";

// A run's small files (summary.json, recipe.yaml): regular files inside `root` only, else "".
std::string read_text(const fs::path& file, const fs::path& root, std::uint64_t max_bytes) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return "";
  try {
    return read_file(file.string(), {.what = "the file", .max_bytes = max_bytes, .inside = root.string()});
  } catch (const FileError&) {
    return "";
  }
}

// Seconds since `file` last changed; a large number when it is missing.
double age_s(const fs::path& file) {
  std::error_code ec;
  const auto t = fs::last_write_time(file, ec);
  if (ec) return 1e12;
  return std::chrono::duration<double>(fs::file_time_type::clock::now() - t).count();
}

}  // namespace

// Regular files of a folder (not links, not FIFOs) with their sizes, by name (checkpoints/, traces/).
nlohmann::json listing(const fs::path& dir, const std::string& extension) {
  nlohmann::json out = nlohmann::json::array();
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return out;
  std::vector<fs::directory_entry> entries(fs::directory_iterator(dir, ec), fs::directory_iterator());
  std::sort(entries.begin(), entries.end());
  for (const auto& e : entries) {
    if (!fs::is_regular_file(e.symlink_status(ec)) || (!extension.empty() && e.path().extension() != extension))
      continue;
    out.push_back({{"name", e.path().filename().string()}, {"bytes", e.file_size(ec)}});
  }
  return out;
}

Run::Run(std::string id, fs::path dir, fs::path root)
    : id_(std::move(id)), dir_(std::move(dir)), root_(std::move(root)) {}

void Run::refresh() {
  read_metrics();
  if (summary_.is_null()) {
    summary_ = nlohmann::json::parse(read_text(RunDir(dir_).summary(), root_, 1u << 20), nullptr, false);
    if (summary_.is_discarded()) summary_ = nullptr;  // missing, or being written: next time
  }
  if (recipe_.empty()) recipe_ = read_text(RunDir(dir_).recipe(), root_, 1u << 20);
}

// What was appended to metrics.jsonl since the last call, at most 64 MiB a call (a file that only
// grows is read in steps); a file that is not a regular file inside the run's folder is not read.
void Run::read_metrics() {
  const fs::path file = RunDir(dir_).metrics_jsonl();
  std::error_code ec;
  if (!fs::exists(file, ec)) return;
  std::optional<ReadableFile> in;
  try {
    in.emplace(file.string(),
               ReadOptions{.what = RunDir::kMetricsJsonl, .max_bytes = UINT64_MAX, .inside = root_.string()});
  } catch (const FileError& e) {
    if (problems_.size() < 20 && (problems_.empty() || problems_.back() != e.what())) problems_.push_back(e.what());
    return;
  }
  const std::uint64_t size = in->size();
  if (size < offset_) {  // rewritten (a resumed run keeps its lines up to the checkpoint)
    offset_ = 0;
    lines_ = 0;
    metrics_.clear();
  }
  if (size == offset_) return;
  constexpr std::size_t kMaxChunk = 64u << 20;
  std::string chunk(static_cast<std::size_t>(std::min<std::uint64_t>(size - offset_, kMaxChunk)), '\0');
  const ssize_t got = ::pread(in->fd(), chunk.data(), chunk.size(), static_cast<off_t>(offset_));
  chunk.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  const auto end = chunk.rfind('\n');
  if (end == std::string::npos && chunk.size() == kMaxChunk) {  // one line longer than a chunk: not metrics
    if (problems_.size() < 20) problems_.push_back(file.string() + ": a line longer than 64 MiB, skipped");
    offset_ += chunk.size();
    return;
  }
  if (end == std::string::npos) return;  // a line being written: next time
  std::size_t at = 0;
  while (at <= end) {
    const auto nl = chunk.find('\n', at);
    ++lines_;
    take_line(chunk.substr(at, nl - at));
    at = nl + 1;
  }
  offset_ += end + 1;
}

void Run::take_line(const std::string& line) {
  if (line.empty()) return;
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    if (problems_.size() < 20)
      problems_.push_back(RunDir(dir_).metrics_jsonl().string() + ":" + std::to_string(lines_) + ": not a JSON object");
    return;
  }
  if (j.contains("hyperparameters")) {
    hyperparameters_ = j["hyperparameters"];
    return;
  }
  const int64_t step = j.value("step", int64_t{0});
  const double time = j.value("time", 0.0);
  if (first_time_ == 0) first_time_ = time;
  last_time_ = std::max(last_time_, time);
  last_step_ = std::max(last_step_, step);
  for (const auto& [key, value] : j.items()) {
    if (key == "step" || key == "time" || !value.is_number()) continue;
    metrics_[key].push_back({step, time, value.get<double>()});
  }
}

// finished: summary.json; running: metrics.jsonl or a checkpoint changed in the last minute;
// failed: neither (stopped without a summary).
std::string Run::status() const {
  if (!summary_.is_null()) return "finished";
  return std::min(age_s(RunDir(dir_).metrics_jsonl()), age_s(RunDir(dir_).checkpoints())) < 60 ? "running" : "failed";
}

// The folder's name; a recipe search's trial (SEARCH/trials/ID) as "SEARCH/trial-ID", not "3".
std::string Run::display_name() const {
  const fs::path parent = dir_.parent_path();
  if (parent.filename() == "trials" && !parent.parent_path().filename().empty()) {
    return parent.parent_path().filename().string() + "/trial-" + dir_.filename().string();
  }
  return dir_.filename().string();
}

nlohmann::json Run::row() const {
  auto last = [&](const std::string& key) -> nlohmann::json {
    auto it = metrics_.find(key);
    return it == metrics_.end() || it->second.empty() ? nlohmann::json() : nlohmann::json(it->second.back().value);
  };
  nlohmann::json best = nullptr;
  if (auto it = metrics_.find("eval/accuracy"); it != metrics_.end()) {
    for (const auto& p : it->second) best = best.is_null() ? p.value : std::max(best.get<double>(), p.value);
  }
  nlohmann::json row = {{"id", id_},
                        {"name", display_name()},
                        {"path", dir_.string()},
                        {"status", status()},
                        {"steps", last_step_},
                        {"best_accuracy", best},
                        {"train_loss", last("train/loss")},
                        {"samples_per_s", last("throughput/samples_per_sec")},
                        {"duration_s", last_time_ - first_time_},
                        {"started", first_time_},
                        {"problems", problems_.size()}};
  if (auto it = metrics_.find(kEpochEnd); it != metrics_.end()) row["epochs"] = it->second.size();
  if (!summary_.is_null() && summary_.contains("samples_per_s")) row["samples_per_s"] = summary_["samples_per_s"];
  return row;
}

nlohmann::json Run::detail() const {
  nlohmann::json keys = nlohmann::json::array();
  for (const auto& [key, points] : metrics_) keys.push_back({{"name", key}, {"points", points.size()}});
  return {{"row", row()},
          {"recipe", recipe_},
          {"hyperparameters", hyperparameters_},
          {"summary", summary_},
          {"metrics", keys},
          {"checkpoints", listing(RunDir(dir_).checkpoints(), ".ckpt")},
          {"traces", listing(RunDir(dir_).traces(), ".json")},
          {"problems", problems_}};
}

// The epoch (fractional) at `step`: between the steps at which epochs ended (the speed monitor's
// wall_clock/epoch_s lines), linearly; past the last one at the last epoch's pace.
double Run::epoch_at(int64_t step) const {
  auto it = metrics_.find(kEpochEnd);
  if (it == metrics_.end() || it->second.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto& ends = it->second;
  int64_t begin = 0;
  for (std::size_t k = 0; k < ends.size(); ++k) {
    const int64_t end = ends[k].step;
    if (step <= end || k + 1 == ends.size()) {
      return static_cast<double>(k) +
             static_cast<double>(step - begin) / static_cast<double>(std::max<int64_t>(end - begin, 1));
    }
    begin = end;
  }
  return 0;
}

nlohmann::json Run::series(const std::vector<std::string>& keys, const std::string& x, std::size_t points) const {
  nlohmann::json out = nlohmann::json::object();
  if (x == "epoch" && !metrics_.count(kEpochEnd)) return out;
  for (const auto& key : keys) {
    auto it = metrics_.find(key);
    if (it == metrics_.end()) continue;
    std::vector<double> xs, ys, dx, dy;
    xs.reserve(it->second.size());
    ys.reserve(it->second.size());
    for (const auto& p : it->second) {
      xs.push_back(x == "time" ? p.time - first_time_ : x == "epoch" ? epoch_at(p.step) : static_cast<double>(p.step));
      ys.push_back(p.value);
    }
    downsample(xs, ys, points, dx, dy);
    out[key] = {{"x", dx}, {"y", dy}, {"points", it->second.size()}};
  }
  return out;
}

void downsample(const std::vector<double>& x, const std::vector<double>& y, std::size_t points,
                std::vector<double>& out_x, std::vector<double>& out_y) {
  out_x.clear();
  out_y.clear();
  if (x.size() <= points || points < 3) {
    out_x = x;
    out_y = y;
    return;
  }
  const std::size_t buckets = points / 3;
  const double lo = x.front(), span = std::max(x.back() - x.front(), 1e-12);
  std::size_t i = 0;
  for (std::size_t b = 0; b < buckets && i < x.size(); ++b) {
    const double upper = lo + span * static_cast<double>(b + 1) / static_cast<double>(buckets);
    const std::size_t first = i;
    std::size_t low = i, high = i;
    for (; i < x.size() && (x[i] <= upper || b + 1 == buckets); ++i) {
      if (y[i] < y[low]) low = i;
      if (y[i] > y[high]) high = i;
    }
    if (i == first) continue;
    std::vector<std::size_t> keep = {first, low, high};
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    for (auto k : keep) {
      out_x.push_back(x[k]);
      out_y.push_back(y[k]);
    }
  }
  if (out_x.back() != x.back()) {  // the last value is the one a user looks for
    out_x.push_back(x.back());
    out_y.push_back(y.back());
  }
}

}  // namespace baton::dashboard
