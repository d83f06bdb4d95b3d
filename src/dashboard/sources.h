// What the dashboard reads: run directories (metrics.jsonl read as it grows) and search storages,
// found from the paths it was given, and their JSON for the API (runs.cpp, searches.cpp,
// importance.cpp, catalog.cpp). Private to src/dashboard.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace baton {
class TrialStorage;
}

namespace baton::dashboard {

// One run directory. refresh() reads what was appended to metrics.jsonl since the last call (a
// last line without its newline waits for it), and summary.json, recipe.yaml, checkpoints/ and
// traces/ again when they changed. A line that is not JSON is a problem of the run (file:line),
// the rest is still read.
class Run {
 public:
  // Files are read only when they resolve inside `root` (the folder given to the dashboard).
  Run(std::string id, std::filesystem::path dir, std::filesystem::path root);
  void refresh();
  nlohmann::json row() const;        // the runs table's row
  nlohmann::json detail() const;     // recipe, summary, checkpoints, traces, metric names, problems
  std::string display_name() const;  // the folder's name; a search's trial's: SEARCH/trial-ID
  // `keys`' curves against x = "step", "epoch" (when the run logs wall_clock/epoch_s at each
  // epoch's end, as the speed monitor does) or "time" (seconds since the first line), at most about
  // `points` points each: every bucket of steps keeps its first, lowest and highest value.
  nlohmann::json series(const std::vector<std::string>& keys, const std::string& x, std::size_t points) const;
  const std::filesystem::path& dir() const { return dir_; }
  const std::filesystem::path& root() const { return root_; }
  const std::string& id() const { return id_; }

 private:
  struct Point {
    int64_t step;
    double time, value;
  };
  void read_metrics();
  void take_line(const std::string& line);
  double epoch_at(int64_t step) const;
  std::string status() const;

  std::string id_;
  std::filesystem::path dir_, root_;
  std::uintmax_t offset_ = 0;
  int64_t lines_ = 0;
  std::map<std::string, std::vector<Point>> metrics_;
  nlohmann::json hyperparameters_, summary_;
  std::string recipe_;
  std::vector<std::string> problems_;
  double first_time_ = 0, last_time_ = 0;
  int64_t last_step_ = 0;
};

// One search storage, read whole at each refresh (10,000 trials: a few tens of milliseconds).
class Search {
 public:
  Search(std::string id, std::string url, std::filesystem::path trials_dir);
  void refresh();
  nlohmann::json row() const;
  // Trials, the best-so-far history, parameter importance; `run_ids`: trial id -> run id.
  nlohmann::json detail(const std::map<int64_t, std::string>& run_ids) const;
  const std::string& id() const { return id_; }
  const std::filesystem::path& trials_dir() const { return trials_dir_; }

 private:
  std::string signature() const;

  std::string id_, url_, shown_, signature_;  // shown_: the URL without its password
  std::filesystem::path trials_dir_;
  std::unique_ptr<TrialStorage> storage_;
  nlohmann::json trials_ = nlohmann::json::array(), meta_;
  std::string problem_;
};

// Everything the paths name, found again at each refresh (new runs in a folder show up). The
// constructor only finds them; the first refresh() reads them, and what asks before it has ended
// waits for it (a server can answer at once, its first answers when the data is read).
class Catalog {
 public:
  // Throws std::invalid_argument when no path is usable (each one's reason in the message).
  explicit Catalog(std::vector<std::string> paths);
  ~Catalog();
  void refresh();
  nlohmann::json runs() const;
  nlohmann::json searches() const;
  nlohmann::json run(const std::string& id) const;  // null when unknown
  nlohmann::json series(const std::string& id, const std::vector<std::string>& keys, const std::string& x,
                        std::size_t points) const;
  nlohmann::json search(const std::string& id) const;
  // A trace the run's traces/ lists (a regular .json file inside its folder); nullopt: none.
  std::optional<std::string> read_trace(const std::string& run, const std::string& name) const;
  std::vector<std::string> problems() const;

 private:
  void discover();
  void add_path(const std::string& path, const std::filesystem::path& root);  // root empty: given
  void add_run(const std::filesystem::path& dir, const std::filesystem::path& root);
  void add_search(const std::string& url, const std::filesystem::path& trials_dir, const std::filesystem::path& root);
  std::unique_lock<std::mutex> read_lock() const;  // once the first refresh has read everything

  std::vector<std::string> paths_;
  mutable std::mutex mutex_;
  mutable std::condition_variable read_once_;
  bool read_ = false;
  std::map<std::string, std::unique_ptr<Run>> runs_;  // by id
  std::map<std::string, std::unique_ptr<Search>> searches_;
  std::map<std::string, std::string> ids_;  // canonical path or URL -> id
  std::vector<std::string> problems_;
  std::size_t seen_ = 0;  // runs and storages met by add_path, known or new
};

// Every `points`-th-ish point of (x, y): per bucket of equal x range its first, lowest and highest.
void downsample(const std::vector<double>& x, const std::vector<double>& y, std::size_t points,
                std::vector<double>& out_x, std::vector<double>& out_y);

// The share of the value's variance that each parameter explains alone: ε², the correlation
// ratio corrected for the number of bins (numbers in n / 5 quantile bins, 2 to 10; choices by
// value; a nested parameter's absence its own bin). A main-effect estimate like fANOVA's first-
// order terms, computed on the trials themselves rather than on a fitted forest.
nlohmann::json parameter_importance(const nlohmann::json& trials);

// Shared by the files that read runs and searches:
// A folder's regular files (not links, not FIFOs) with their sizes, by name (checkpoints/, traces/).
nlohmann::json listing(const std::filesystem::path& dir, const std::string& extension);
// A trial's final value (its JSON as the storage gives it), when it has a number.
std::optional<double> final_of(const nlohmann::json& trial);

}  // namespace baton::dashboard
