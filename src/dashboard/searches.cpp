#include <optional>

#include "baton/exec/experiment.h"
#include "baton/exec/pareto.h"
#include "baton/exec/storage.h"
#include "baton/io/run_dir.h"
#include "sources.h"

namespace baton::dashboard {
namespace fs = std::filesystem;

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

// Several objectives: the non-dominated rank of the best 1,000 comparable trials (constraint-
// dominance: the infeasible after the feasible; 0 is the front) and the Pareto front (its feasible trials), for
// the page's scatter (2 objectives) or parallel coordinates (3 and more).
void add_pareto(const nlohmann::json& trials, const nlohmann::json& meta, nlohmann::json& out) {
  const Objectives objectives = stored_objectives(meta);
  if (objectives.size() < 2) return;
  std::vector<int64_t> ids;
  std::vector<std::vector<double>> losses;
  std::vector<double> violations;
  for (const auto& j : trials) {
    const Trial t = Trial::from_json(j);
    if (!objectives.usable(t)) continue;
    ids.push_back(t.id);
    losses.push_back(objectives.losses(t));
    violations.push_back(objectives.violation(t));
  }
  nlohmann::json ranks = nlohmann::json::object(), front = nlohmann::json::array();
  const auto fronts = nondominated_fronts(losses, violations, 1000);  // the page draws the best 1,000
  for (std::size_t r = 0; r < fronts.size(); ++r) {
    for (std::size_t i : fronts[r]) {
      ranks[std::to_string(ids[i])] = r;
      if (r == 0 && violations[i] <= 0) front.push_back(ids[i]);
    }
  }
  out["objectives"] = meta["objectives"];
  out["ranks"] = ranks;
  out["pareto"] = front;
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
  add_pareto(trials_, meta_, out);
  return out;
}

std::optional<double> final_of(const nlohmann::json& t) {
  if (!t.contains("final") || !t["final"].is_number()) return {};
  return t["final"].get<double>();
}

}  // namespace baton::dashboard
