#include <algorithm>
#include <optional>

#include <unistd.h>

#include "baton/exec/storage.h"
#include "baton/io/file.h"
#include "baton/io/run_dir.h"
#include "sources.h"

namespace baton::dashboard {
namespace fs = std::filesystem;
namespace {

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
