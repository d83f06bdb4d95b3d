#include "sources.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include <unistd.h>

#include "baton/exec/storage.h"
#include "baton/io/file.h"
#include "baton/io/run_dir.h"

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

// A run writes metrics.jsonl (or at least summary.json); a search's folder has summary.json too,
// beside its search.db.
bool is_run_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(RunDir(dir).metrics_jsonl(), ec) ||
         (fs::is_regular_file(RunDir(dir).summary(), ec) && !fs::exists(RunDir(dir).search_db(), ec));
}

bool is_sqlite_file(const fs::path& file) {
  if (file.extension() == ".db" || file.extension() == ".sqlite") return true;
  try {
    ReadableFile f(file.string(), {.what = "the storage", .max_bytes = UINT64_MAX});
    char header[16] = {};
    return ::pread(f.fd(), header, sizeof header, 0) == 16 && std::string(header, 15) == "SQLite format 3";
  } catch (const FileError&) {
    return false;
  }
}

std::string canonical_name(const fs::path& p) {
  std::error_code ec;
  const auto c = fs::weakly_canonical(p, ec);
  return ec ? fs::absolute(p).string() : c.string();
}

}  // namespace

// ---- Run -------------------------------------------------------------------------------------

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
                        {"name", dir_.filename().string()},
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

// ---- Search ----------------------------------------------------------------------------------

Search::Search(std::string id, std::string url, fs::path trials_dir)
    : id_(std::move(id)), url_(std::move(url)), shown_(redact_storage_url(url_)), trials_dir_(std::move(trials_dir)) {}

// A SQLite storage's files (the database and its write-ahead log): unchanged files, unchanged
// trials. Empty for PostgreSQL (read at every refresh).
std::string Search::signature() const {
  std::string path;
  if (url_.rfind("sqlite:///", 0) == 0)
    path = url_.substr(9);
  else if (url_.rfind("sqlite:", 0) == 0)
    path = url_.substr(7);
  if (path.empty()) return {};
  std::string out;
  for (const auto& f : {path, path + "-wal"}) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    const auto written = fs::last_write_time(f, ec).time_since_epoch().count();
    out += std::to_string(ec ? 0 : size) + ":" + std::to_string(ec ? 0 : written) + ";";
  }
  return out;
}

void Search::refresh() {
  const std::string files = signature();
  if (!files.empty() && files == signature_ && storage_) return;
  try {
    if (!storage_) storage_ = open_storage(url_);
    nlohmann::json trials = nlohmann::json::array();
    for (const auto& t : storage_->load_trials()) trials.push_back(t.to_json());
    trials_ = std::move(trials);
    meta_ = storage_->meta("search").value_or(nlohmann::json());
    problem_.clear();
    signature_ = files;
  } catch (const std::exception& e) {
    storage_.reset();
    problem_ = shown_ + ": " + redact_storage_url(e.what());
  }
}

namespace {

bool maximizing(const nlohmann::json& meta) {
  return !meta.is_object() || meta.value("direction", "maximize") != "minimize";
}

std::optional<double> final_of(const nlohmann::json& t) {
  if (!t.contains("final") || !t["final"].is_number()) return {};
  return t["final"].get<double>();
}

}  // namespace

nlohmann::json Search::row() const {
  std::map<std::string, int> counts;
  std::optional<double> best;
  const bool max = maximizing(meta_);
  for (const auto& t : trials_) {
    ++counts[t.value("status", "")];
    if (auto v = final_of(t); v && t.value("status", "") == "trained")
      best = !best ? *v : max ? std::max(*best, *v) : std::min(*best, *v);
  }
  return {{"id", id_},
          {"url", shown_},
          {"trials", trials_.size()},
          {"statuses", counts},
          {"best", best ? nlohmann::json(*best) : nlohmann::json()},
          {"direction", max ? "maximize" : "minimize"},
          {"meta", meta_},
          {"problem", problem_}};
}

nlohmann::json Search::detail(const std::map<int64_t, std::string>& run_ids) const {
  nlohmann::json trials = nlohmann::json::array(), history = nlohmann::json::array();
  const bool max = maximizing(meta_);
  std::optional<double> best;
  for (const auto& t : trials_) {
    nlohmann::json row = t;
    const int64_t id = t.value("id", int64_t{0});
    row["duration_s"] = t.value("ended_at", 0.0) > 0
                            ? nlohmann::json(t.value("ended_at", 0.0) - t.value("started_at", 0.0))
                            : nlohmann::json();
    row["pruned"] = t.value("status", "") == "interrupted" && t.value("error", "") == "killed";
    if (auto it = run_ids.find(id); it != run_ids.end()) row["run"] = it->second;
    trials.push_back(row);
    if (auto v = final_of(t); v && t.value("status", "") == "trained") {
      best = !best ? *v : max ? std::max(*best, *v) : std::min(*best, *v);
      history.push_back({{"trial", id}, {"value", *v}, {"best", *best}});
    }
  }
  nlohmann::json out = row();
  out["trials_table"] = trials;
  out["history"] = history;
  out["importance"] = parameter_importance(trials_);
  return out;
}

// ---- parameter importance --------------------------------------------------------------------

namespace {

// Parameters with nested choices flattened: {"optimizer": {"_name": "sgd", "momentum": 0.9}}
// gives optimizer = "sgd" and optimizer.momentum = 0.9.
void flatten(const nlohmann::json& p, const std::string& prefix, std::map<std::string, nlohmann::json>& out) {
  for (const auto& [key, value] : p.items()) {
    if (value.is_object()) {
      out[prefix + key] = value.value("_name", nlohmann::json());
      for (const auto& [k, v] : value.items()) {
        if (k != "_name") flatten({{k, v}}, prefix + key + ".", out);
      }
    } else {
      out[prefix + key] = value;
    }
  }
}

// Bin labels of one parameter's values: numbers by quantile (n / 5 bins, 2 to 10), others by value.
std::vector<std::string> bins_of(const std::vector<nlohmann::json>& values) {
  std::vector<double> numbers;
  for (const auto& v : values) {
    if (v.is_number()) numbers.push_back(v.get<double>());
  }
  std::sort(numbers.begin(), numbers.end());
  std::vector<std::string> out;
  for (const auto& v : values) {
    if (!v.is_number() || numbers.empty()) {
      out.push_back(v.is_null() ? "(absent)" : v.dump());
      continue;
    }
    const auto rank =
        static_cast<double>(std::lower_bound(numbers.begin(), numbers.end(), v.get<double>()) - numbers.begin());
    const double bins = std::clamp(static_cast<double>(numbers.size() / 5), 2.0, 10.0);
    out.push_back("#" + std::to_string(static_cast<int>(bins * rank / static_cast<double>(numbers.size()))));
  }
  return out;
}

}  // namespace

nlohmann::json parameter_importance(const nlohmann::json& trials) {
  std::vector<double> y;
  std::vector<std::map<std::string, nlohmann::json>> rows;
  std::set<std::string> names;
  for (const auto& t : trials) {
    const auto v = final_of(t);
    if (!v || t.value("status", "") != "trained" || !std::isfinite(*v)) continue;
    y.push_back(*v);
    rows.emplace_back();
    flatten(t.value("parameters", nlohmann::json::object()), "", rows.back());
    for (const auto& [k, _] : rows.back()) names.insert(k);
  }
  nlohmann::json out = nlohmann::json::array();
  if (y.size() < 8) return out;  // fewer finished trials say nothing about importance
  double mean = 0;
  for (double v : y) mean += v;
  mean /= static_cast<double>(y.size());
  double total = 0;
  for (double v : y) total += (v - mean) * (v - mean);
  if (total <= 0) return out;
  for (const auto& name : names) {
    std::vector<nlohmann::json> values;
    for (const auto& r : rows) values.push_back(r.count(name) ? r.at(name) : nlohmann::json());
    const auto bins = bins_of(values);
    std::map<std::string, std::pair<double, int>> groups;
    for (std::size_t i = 0; i < y.size(); ++i) {
      groups[bins[i]].first += y[i];
      ++groups[bins[i]].second;
    }
    double between = 0;
    for (const auto& [_, g] : groups) between += g.second * std::pow(g.first / g.second - mean, 2);
    // ε²: η² less what k bins explain of pure noise (without it, few trials in many bins look
    // important); 0 when the bins explain no more than that.
    const double k = static_cast<double>(groups.size()), n = static_cast<double>(y.size());
    const double within = n > k ? (total - between) / (n - k) : 0;
    out.push_back({{"parameter", name}, {"importance", std::max(0.0, (between - (k - 1) * within) / total)}});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a["importance"] > b["importance"]; });
  return out;
}

// ---- Catalog ---------------------------------------------------------------------------------

Catalog::Catalog(std::vector<std::string> paths) : paths_(std::move(paths)) {
  discover();
  std::error_code ec;
  const bool watching =
      std::any_of(paths_.begin(), paths_.end(), [&](const auto& p) { return fs::is_directory(p, ec); });
  if (runs_.empty() && searches_.empty() && !watching) {
    std::string why;
    for (const auto& p : problems_) why += "\n  " + p;
    throw std::invalid_argument("nothing to show:" + why);
  }
}

Catalog::~Catalog() = default;

void Catalog::discover() {
  std::lock_guard lock(mutex_);
  problems_.clear();
  for (const auto& p : paths_) add_path(p, {});
}

// `root`: the folder that was given, inside which every file of what is found must lie (a link
// out of it is not followed).
void Catalog::add_path(const std::string& path, const fs::path& root) {
  const bool given = root.empty();
  if (path.rfind("postgresql://", 0) == 0 || path.rfind("postgres://", 0) == 0) return add_search(path, {}, {});
  std::error_code ec;
  if (path.rfind("sqlite:", 0) == 0) {  // opening a missing file would create it: the dashboard only reads
    const fs::path file = path.substr(path.rfind("sqlite:///", 0) == 0 ? 9 : 7);
    if (fs::is_regular_file(file, ec)) return add_search(path, file.parent_path() / "trials", file.parent_path());
    if (given) problems_.push_back(path + ": " + (fs::exists(file, ec) ? "not a regular file" : "no such file"));
    return;
  }
  const fs::path p(path);
  if (!given && !resolves_inside(p.string(), root.string())) return;  // a link out of the folder
  const fs::path inside = given ? p : root;
  if (fs::is_regular_file(p, ec) && is_sqlite_file(p))
    return add_search("sqlite://" + canonical_name(p), p.parent_path() / "trials", p.parent_path());
  if (fs::is_directory(p, ec) && is_run_dir(p)) return add_run(p, inside);
  if (fs::is_directory(p, ec)) {
    bool found = false;
    std::vector<fs::path> children;
    for (const auto& e : fs::directory_iterator(p, ec)) children.push_back(e.path());
    std::sort(children.begin(), children.end());
    for (const auto& c : children) {
      const std::size_t before = seen_;
      if (!resolves_inside(c.string(), inside.string())) continue;
      if (fs::is_regular_file(c, ec) && c.filename() == RunDir::kSearchDb)
        add_search("sqlite://" + canonical_name(c), p / "trials", p);
      else if (fs::is_directory(c, ec) && given)
        add_path(c.string(), inside);
      found = found || seen_ > before;
    }
    if (!found && given)
      problems_.push_back(path + ": no runs (metrics.jsonl) or search storages in it yet; watching it");
    return;
  }
  if (given) {
    problems_.push_back(path + ": " +
                        (fs::exists(p, ec) ? "neither a run directory (metrics.jsonl), a folder of runs, nor a search "
                                             "storage (a SQLite file, postgresql://...)"
                                           : "no such file or directory"));
  }
}

void Catalog::add_run(const fs::path& dir, const fs::path& root) {
  ++seen_;
  const std::string key = canonical_name(dir);
  if (ids_.count(key)) return;
  const std::string id = "r" + std::to_string(runs_.size() + 1);
  ids_[key] = id;
  runs_[id] = std::make_unique<Run>(id, dir, root);
}

// The storage, once; its trials' run directories (a recipe search's) each time, as they appear.
void Catalog::add_search(const std::string& url, const fs::path& trials_dir, const fs::path& root) {
  ++seen_;
  if (!ids_.count(url)) {
    const std::string id = "s" + std::to_string(searches_.size() + 1);
    ids_[url] = id;
    searches_[id] = std::make_unique<Search>(id, url, trials_dir);
  }
  std::error_code ec;
  if (trials_dir.empty() || !fs::is_directory(trials_dir, ec) || !resolves_inside(trials_dir.string(), root.string()))
    return;
  for (const auto& e : fs::directory_iterator(trials_dir, ec)) {
    if (e.is_directory(ec) && resolves_inside(e.path().string(), root.string()) && is_run_dir(e.path()))
      add_run(e.path(), root);
  }
}

void Catalog::refresh() {
  discover();
  {
    std::lock_guard lock(mutex_);
    for (auto& [_, r] : runs_) r->refresh();
    for (auto& [_, s] : searches_) s->refresh();
    read_ = true;
  }
  read_once_.notify_all();
}

std::unique_lock<std::mutex> Catalog::read_lock() const {
  std::unique_lock lock(mutex_);
  read_once_.wait(lock, [this] { return read_; });
  return lock;
}

nlohmann::json Catalog::runs() const {
  const auto lock = read_lock();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [_, r] : runs_) out.push_back(r->row());
  return out;
}

nlohmann::json Catalog::searches() const {
  const auto lock = read_lock();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [_, s] : searches_) out.push_back(s->row());
  return out;
}

nlohmann::json Catalog::run(const std::string& id) const {
  const auto lock = read_lock();
  auto it = runs_.find(id);
  return it == runs_.end() ? nlohmann::json() : it->second->detail();
}

nlohmann::json Catalog::series(const std::string& id, const std::vector<std::string>& keys, const std::string& x,
                               std::size_t points) const {
  const auto lock = read_lock();
  auto it = runs_.find(id);
  return it == runs_.end() ? nlohmann::json() : it->second->series(keys, x, points);
}

nlohmann::json Catalog::search(const std::string& id) const {
  const auto lock = read_lock();
  auto it = searches_.find(id);
  if (it == searches_.end()) return nullptr;
  std::map<int64_t, std::string> run_ids;
  for (const auto& [rid, r] : runs_) {
    if (r->dir().parent_path() != it->second->trials_dir()) continue;
    try {
      run_ids[std::stoll(r->dir().filename().string())] = rid;
    } catch (const std::exception&) {
    }
  }
  return it->second->detail(run_ids);
}

std::optional<std::string> Catalog::read_trace(const std::string& run, const std::string& name) const {
  const auto lock = read_lock();
  auto it = runs_.find(run);
  if (it == runs_.end()) return std::nullopt;
  const Run& r = *it->second;
  for (const auto& listed : listing(RunDir(r.dir()).traces(), ".json")) {
    if (listed["name"] != name) continue;
    try {
      return read_file((RunDir(r.dir()).traces() / name).string(),
                       {.what = "the trace", .max_bytes = 1ull << 30, .inside = r.root().string()});
    } catch (const FileError&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::vector<std::string> Catalog::problems() const {
  const auto lock = read_lock();
  std::vector<std::string> out = problems_;
  for (const auto& [_, s] : searches_) {
    if (auto p = s->row()["problem"].get<std::string>(); !p.empty()) out.push_back(p);
  }
  return out;
}

}  // namespace baton::dashboard
