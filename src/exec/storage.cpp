#include "baton/exec/storage.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "baton/core/registry.h"
#include "exec/sql.h"

namespace baton {

struct SqlStorage::Impl {
  std::unique_ptr<sql::Connection> db;
  std::mutex mutex;  // one connection, used from the engine's threads
  std::string now;   // the server clock, as an SQL expression
};

namespace {

int64_t to_int(const std::optional<std::string>& s) { return s ? std::stoll(*s) : 0; }

Trial parse_trial(const sql::Connection& db, const std::optional<std::string>& body) {
  try {
    return Trial::from_json(nlohmann::json::parse(body.value_or("")));
  } catch (const std::exception& e) {
    throw std::runtime_error(db.where() + ": a trial row is damaged: " + e.what());
  }
}

// A row of "SELECT id, status, worker, trial": the body, with the queue's status and worker.
Trial row_trial(const sql::Connection& db, const sql::Row& row) {
  Trial t = parse_trial(db, row.at(3));
  t.id = to_int(row.at(0));
  t.status = trial_status_from_string(row.at(1).value_or("waiting"));
  t.worker = row.at(2).value_or("");
  return t;
}

constexpr const char* kClaimable = "worker = '' AND status IN ('waiting', 'retrying')";

}  // namespace

SqlStorage::SqlStorage(std::unique_ptr<sql::Connection> connection) : impl_(std::make_unique<Impl>()) {
  impl_->db = std::move(connection);
  impl_->now = impl_->db->now_expression();
  auto& db = *impl_->db;
  sql::write_transaction(db, [&] {
    db.execute(
        "CREATE TABLE IF NOT EXISTS trials (id BIGINT PRIMARY KEY, status TEXT NOT NULL, worker TEXT NOT NULL "
        "DEFAULT '', heartbeat DOUBLE PRECISION NOT NULL DEFAULT 0, trial TEXT NOT NULL)");
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  });
  try {
    db.query("SELECT worker, heartbeat FROM trials LIMIT 0");
  } catch (const std::runtime_error&) {  // a storage written by baton 0.x before the work queue
    sql::write_transaction(db, [&] {
      db.execute("ALTER TABLE trials ADD COLUMN worker TEXT NOT NULL DEFAULT ''");
      db.execute("ALTER TABLE trials ADD COLUMN heartbeat DOUBLE PRECISION NOT NULL DEFAULT 0");
    });
  }
  // Under the write lock too: PostgreSQL's IF NOT EXISTS is not safe against a second worker
  // making the same index at the same moment (a duplicate key in pg_class, one worker gone).
  sql::write_transaction(db, [&] { db.execute("CREATE INDEX IF NOT EXISTS trials_queue ON trials (status, worker)"); });
}

SqlStorage::~SqlStorage() = default;

void SqlStorage::save_trial(const Trial& trial) {
  std::lock_guard lock(impl_->mutex);
  impl_->db->execute(
      "INSERT INTO trials (id, status, trial) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET status = "
      "excluded.status, trial = excluded.trial",
      {trial.id, to_string(trial.status), trial.to_json().dump()});
}

std::vector<Trial> SqlStorage::load_trials() {
  std::lock_guard lock(impl_->mutex);
  std::vector<Trial> out;
  for (const auto& row : impl_->db->query("SELECT id, status, worker, trial FROM trials ORDER BY id"))
    out.push_back(row_trial(*impl_->db, row));
  return out;
}

std::optional<Trial> SqlStorage::load_trial(int64_t id) {
  std::lock_guard lock(impl_->mutex);
  const auto rows = impl_->db->query("SELECT id, status, worker, trial FROM trials WHERE id = ?", {id});
  if (rows.empty()) return std::nullopt;
  return row_trial(*impl_->db, rows[0]);
}

std::vector<TrialState> SqlStorage::states() {
  std::lock_guard lock(impl_->mutex);
  std::vector<TrialState> out;
  for (const auto& row : impl_->db->query("SELECT id, status, worker FROM trials ORDER BY id"))
    out.push_back({to_int(row.at(0)), trial_status_from_string(row.at(1).value_or("waiting")), row.at(2).value_or("")});
  return out;
}

void SqlStorage::set_meta(const std::string& key, const nlohmann::json& value) {
  std::lock_guard lock(impl_->mutex);
  impl_->db->execute(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      {key, value.dump()});
}

std::optional<nlohmann::json> SqlStorage::meta(const std::string& key) {
  std::lock_guard lock(impl_->mutex);
  const auto rows = impl_->db->query("SELECT value FROM meta WHERE key = ?", {key});
  if (rows.empty()) return std::nullopt;
  return nlohmann::json::parse(rows[0].at(0).value_or("null"), nullptr, false);
}

std::optional<int64_t> SqlStorage::create_trial(const nlohmann::json& parameters, int64_t limit,
                                                const std::string& worker) {
  std::lock_guard lock(impl_->mutex);
  auto& db = *impl_->db;
  return sql::write_transaction(db, [&]() -> std::optional<int64_t> {
    const auto rows = db.query("SELECT count(*), coalesce(max(id) + 1, 0), " + impl_->now + " FROM trials");
    if (to_int(rows.at(0).at(0)) >= limit) return std::nullopt;
    Trial t;
    t.id = to_int(rows.at(0).at(1));
    t.parameters = parameters;
    t.submitted_at = std::stod(rows.at(0).at(2).value_or("0"));
    t.worker = worker;
    db.execute(
        "INSERT INTO trials (id, status, worker, heartbeat, trial) VALUES (?, 'waiting', ?, " + impl_->now + ", ?)",
        {t.id, worker, t.to_json().dump()});
    return t.id;
  });
}

std::optional<Trial> SqlStorage::claim_trial(const std::string& worker) {
  std::lock_guard lock(impl_->mutex);
  auto& db = *impl_->db;
  return sql::write_transaction(db, [&]() -> std::optional<Trial> {
    const auto rows = db.query(std::string("SELECT id, status, worker, trial FROM trials WHERE ") + kClaimable +
                               " ORDER BY id LIMIT 1");
    if (rows.empty()) return std::nullopt;
    Trial t = row_trial(db, rows[0]);
    db.execute("UPDATE trials SET status = 'running', worker = ?, heartbeat = " + impl_->now + " WHERE id = ?",
               {worker, t.id});
    t.worker = worker;
    return t;
  });
}

bool SqlStorage::save_owned(const Trial& trial, const std::string& worker) {
  std::lock_guard lock(impl_->mutex);
  Trial copy = trial;
  copy.worker = worker;
  return impl_->db->execute("UPDATE trials SET status = ?, trial = ?, worker = ?, heartbeat = " + impl_->now +
                                " WHERE id = ? AND (worker = ? OR (worker = '' AND status = 'waiting'))",
                            {to_string(copy.status), copy.to_json().dump(), worker, trial.id, worker}) > 0;
}

HeartbeatResult SqlStorage::heartbeat(const std::string& worker, const std::vector<int64_t>& ids) {
  std::lock_guard lock(impl_->mutex);
  HeartbeatResult result;
  if (ids.empty()) return result;
  auto& db = *impl_->db;
  sql::write_transaction(db, [&] {
    for (int64_t id : ids) {
      if (db.execute("UPDATE trials SET heartbeat = " + impl_->now + " WHERE id = ? AND worker = ?", {id, worker}) > 0)
        continue;
      if (db.execute("UPDATE trials SET worker = ?, heartbeat = " + impl_->now +
                         " WHERE id = ? AND worker = '' AND status = 'waiting'",
                     {worker, id}) > 0) {
        result.reattached.push_back(id);
      } else {
        result.lost.push_back(id);
      }
    }
  });
  return result;
}

std::vector<Trial> SqlStorage::requeue_stale(double stale_after_s,
                                             const std::function<bool(const std::string&)>& is_dead) {
  std::lock_guard lock(impl_->mutex);
  auto& db = *impl_->db;
  return sql::write_transaction(db, [&] {
    std::vector<Trial> requeued;
    const auto rows = db.query("SELECT id, status, worker, trial, " + impl_->now +
                               " - heartbeat FROM trials WHERE worker <> '' AND status IN ('waiting', 'running', "
                               "'retrying')");
    for (const auto& row : rows) {
      Trial t = row_trial(db, row);
      const double silent = std::stod(row.at(4).value_or("0"));
      const bool dead = is_dead && is_dead(t.worker);
      if (silent <= stale_after_s && !dead) continue;
      requeued.push_back(t);
      char why[160];
      if (dead)
        std::snprintf(why, sizeof why, "worker %s ended while running it; run again", t.worker.c_str());
      else
        std::snprintf(why, sizeof why, "worker %s stopped beating (silent %.0f s); run again", t.worker.c_str(),
                      std::floor(silent));
      t.error = why;
      t.worker.clear();
      t.status = TrialStatus::kWaiting;
      db.execute("UPDATE trials SET status = 'waiting', worker = '', trial = ? WHERE id = ? AND worker = ?",
                 {t.to_json().dump(), t.id, requeued.back().worker});
    }
    return requeued;
  });
}

bool SqlStorage::release(int64_t id, const std::string& worker) {
  std::lock_guard lock(impl_->mutex);
  return impl_->db->execute(
             "UPDATE trials SET worker = '', status = CASE WHEN status = 'running' THEN 'waiting' ELSE status END "
             "WHERE id = ? AND worker = ?",
             {id, worker}) > 0;
}

bool SqlStorage::end_unclaimed(const Trial& trial) {
  std::lock_guard lock(impl_->mutex);
  return impl_->db->execute(std::string("UPDATE trials SET status = ?, trial = ? WHERE id = ? AND ") + kClaimable,
                            {to_string(trial.status), trial.to_json().dump(), trial.id}) > 0;
}

SqliteStorage::SqliteStorage(const std::string& path) : SqlStorage(sql::open_sqlite(path)) {}

PostgresStorage::PostgresStorage(const std::string& url) : SqlStorage(sql::open_postgres(url)) {}

std::string storage_file(const std::string& url) {
  if (url.rfind("sqlite:///", 0) == 0) return url.substr(9);
  if (url.rfind("sqlite:", 0) == 0) return url.substr(7);
  const bool sqlite_name = url.ends_with(".db") || url.ends_with(".sqlite") || url.ends_with(".sqlite3");
  if (url.find("://") == std::string::npos && sqlite_name) return url;
  return {};
}

namespace {

// The storages by URL scheme: the forms a user may write, and how each opens.
struct StorageKind {
  std::string forms;
  std::function<std::unique_ptr<TrialStorage>(const std::string& url)> open;
};
using Storages = Registry<StorageKind>;

const Storages& storage_registry() {
  static const Storages table(
      "storage", Storages::Order::kRegistration,
      {{"sqlite",
        [] {
          return StorageKind{"sqlite:///ABSOLUTE/PATH.db, sqlite:RELATIVE.db, a path ending in .db",
                             [](const std::string& url) { return std::make_unique<SqliteStorage>(storage_file(url)); }};
        }},
       {"postgresql", [] {
          return StorageKind{"postgresql://USER@HOST:PORT/DATABASE (or postgres://)",
                             [](const std::string& url) { return std::make_unique<PostgresStorage>(url); }};
        }}});
  return table;
}

// The registered storage a URL names ("" for none): a SQLite file's forms, or its scheme.
std::string storage_scheme(const std::string& url) {
  if (!storage_file(url).empty()) return "sqlite";
  const auto end = url.find("://");
  const std::string scheme = end == std::string::npos ? "" : url.substr(0, end);
  if (scheme == "postgres") return "postgresql";
  return storage_registry().contains(scheme) ? scheme : "";
}

}  // namespace

std::string storage_forms() {
  std::vector<std::string> forms;
  for (const std::string& name : storage_registry().names()) forms.push_back(storage_registry().make(name).forms);
  return either_of(forms);
}

std::unique_ptr<TrialStorage> open_storage(const std::string& url) {
  const std::string scheme = storage_scheme(url);
  if (scheme.empty())
    throw std::invalid_argument("storage '" + redact_storage_url(url) + "': expected " + storage_forms());
  return storage_registry().make(scheme).open(url);
}

std::string redact_storage_url(const std::string& url) {
  std::string out = url;
  // user:PASSWORD@ in the authority
  if (const auto scheme = out.find("://"); scheme != std::string::npos) {
    const auto slash = out.find('/', scheme + 3);
    const auto at = out.rfind('@', slash == std::string::npos ? std::string::npos : slash);
    const auto colon = out.find(':', scheme + 3);
    if (at != std::string::npos && at > scheme && colon != std::string::npos && colon < at) {
      out = out.substr(0, colon + 1) + "***" + out.substr(at);
    }
  }
  // password=VALUE in a query string or a key=value connection string
  for (auto at = out.find("password="); at != std::string::npos; at = out.find("password=", at + 1)) {
    const auto begin = at + 9;
    auto end = out.find_first_of("& ", begin);
    if (end == std::string::npos) end = out.size();
    out.replace(begin, end - begin, "***");
  }
  return out;
}

}  // namespace baton
