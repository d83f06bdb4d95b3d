#include "baton/exec/storage.h"

#include <sqlite3.h>

#include <filesystem>
#include <mutex>
#include <stdexcept>

namespace baton {

struct SqliteStorage::Impl {
  sqlite3* db = nullptr;
  std::string path;
  std::mutex mutex;  // one connection, used from the engine's threads
};

namespace {

[[noreturn]] void fail(sqlite3* db, const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}

struct Statement {
  Statement(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) fail(db, path, "prepare");
  }
  ~Statement() { sqlite3_finalize(stmt); }
  void text(int i, const std::string& s) { sqlite3_bind_text(stmt, i, s.c_str(), static_cast<int>(s.size()), SQLITE_TRANSIENT); }
  void run() {
    if (sqlite3_step(stmt) != SQLITE_DONE) fail(db_, path_, "write");
  }
  sqlite3_stmt* stmt = nullptr;
  sqlite3* db_;
  const std::string& path_;
};

}  // namespace

SqliteStorage::SqliteStorage(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (sqlite3_open_v2(path.c_str(), &impl_->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string why = impl_->db ? sqlite3_errmsg(impl_->db) : "out of memory";
    sqlite3_close(impl_->db);
    impl_->db = nullptr;
    throw std::runtime_error(path + ": cannot open the storage: " + why);
  }
  sqlite3_busy_timeout(impl_->db, 30000);  // writers from other processes wait, not fail
  try {
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
    exec("CREATE TABLE IF NOT EXISTS trials (id INTEGER PRIMARY KEY, status TEXT NOT NULL, trial TEXT NOT NULL)");
    exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  } catch (const std::runtime_error& e) {
    sqlite3_close(impl_->db);
    impl_->db = nullptr;
    throw std::runtime_error(std::string(e.what()) + " (not an SQLite file?)");
  }
}

SqliteStorage::~SqliteStorage() {
  if (impl_ && impl_->db) sqlite3_close(impl_->db);
}

void SqliteStorage::exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(impl_->db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string why = error ? error : "?";
    sqlite3_free(error);
    throw std::runtime_error(impl_->path + ": " + why);
  }
}

void SqliteStorage::save_trial(const Trial& trial) {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, impl_->path, "INSERT OR REPLACE INTO trials (id, status, trial) VALUES (?, ?, ?)");
  sqlite3_bind_int64(s.stmt, 1, trial.id);
  s.text(2, to_string(trial.status));
  s.text(3, trial.to_json().dump());
  s.run();
}

std::vector<Trial> SqliteStorage::load_trials() {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, impl_->path, "SELECT trial FROM trials ORDER BY id");
  std::vector<Trial> out;
  for (int rc; (rc = sqlite3_step(s.stmt)) != SQLITE_DONE;) {
    if (rc != SQLITE_ROW) fail(impl_->db, impl_->path, "read");
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s.stmt, 0));
    try {
      out.push_back(Trial::from_json(nlohmann::json::parse(text ? text : "")));
    } catch (const std::exception& e) {
      throw std::runtime_error(impl_->path + ": a trial row is damaged: " + e.what());
    }
  }
  return out;
}

void SqliteStorage::set_meta(const std::string& key, const nlohmann::json& value) {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, impl_->path, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)");
  s.text(1, key);
  s.text(2, value.dump());
  s.run();
}

std::optional<nlohmann::json> SqliteStorage::meta(const std::string& key) {
  std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, impl_->path, "SELECT value FROM meta WHERE key = ?");
  s.text(1, key);
  const int rc = sqlite3_step(s.stmt);
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) fail(impl_->db, impl_->path, "read");
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s.stmt, 0));
  return nlohmann::json::parse(text ? text : "null", nullptr, false);
}

std::unique_ptr<TrialStorage> open_storage(const std::string& url) {
  auto ends_with = [&](const std::string& suffix) {
    return url.size() >= suffix.size() && url.compare(url.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (url.rfind("sqlite:///", 0) == 0) return std::make_unique<SqliteStorage>(url.substr(9));
  if (url.rfind("sqlite:", 0) == 0) return std::make_unique<SqliteStorage>(url.substr(7));
  if (url.find("://") == std::string::npos && (ends_with(".db") || ends_with(".sqlite") || ends_with(".sqlite3")))
    return std::make_unique<SqliteStorage>(url);
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) {
    throw std::invalid_argument("storage '" + url + "': PostgreSQL storage is not built yet; use sqlite:///PATH.db");
  }
  throw std::invalid_argument("storage '" + url + "': expected sqlite:///ABSOLUTE/PATH.db, sqlite:RELATIVE.db or a path ending in .db");
}

}  // namespace baton
