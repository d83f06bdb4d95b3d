// The SQLite connection of the trial storage: WAL, a 30 s busy timeout (writes retried for 10 min
// in all), typed bindings.
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "baton/io/file.h"
#include "exec/sql.h"

namespace baton::sql {
namespace {

constexpr int kBusyTimeoutMs = 30000;  // one wait for the lock (SQLite's busy handler)
constexpr double kMaxLockWaitS = 600;  // a write waits this long in all before it fails

class SqliteConnection : public Connection {
 public:
  explicit SqliteConnection(const std::string& path) : path_(path) {
    const auto parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
      // SQLite would open a FIFO or a device and wait on it, or read it forever.
      throw std::runtime_error(path + ": " + file_kind(path) + ", not a regular file; a storage is an SQLite file");
    }
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw std::runtime_error(path + ": cannot open the storage: " + why);
    }
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);  // writers from other processes wait, not fail
    try {
      // Two processes opening a new file at once: one switches it to WAL, the other may get
      // "database is locked" from the switch without its busy handler being asked; it retries.
      for (int attempt = 0;; ++attempt) {
        try {
          if (query("PRAGMA journal_mode", {}).at(0).at(0) != "wal") execute("PRAGMA journal_mode=WAL", {});
          break;
        } catch (const std::runtime_error&) {
          if (sqlite3_errcode(db_) != SQLITE_BUSY || attempt >= 300) throw;
          std::this_thread::sleep_for(std::chrono::milliseconds(10 + attempt % 20));
        }
      }
      execute("PRAGMA synchronous=NORMAL", {});
    } catch (const std::runtime_error& e) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw std::runtime_error(std::string(e.what()) + " (not an SQLite file?)");
    }
  }
  ~SqliteConnection() override { sqlite3_close(db_); }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  std::vector<Row> query(const std::string& sql, const std::vector<Value>& params) override {
    Statement s(*this, sql, params);
    std::vector<Row> rows;
    for (int rc; (rc = sqlite3_step(s.stmt)) != SQLITE_DONE;) {
      if (rc != SQLITE_ROW) fail(sql);
      Row row(static_cast<std::size_t>(sqlite3_column_count(s.stmt)));
      for (int i = 0; i < static_cast<int>(row.size()); ++i) {
        if (sqlite3_column_type(s.stmt, i) == SQLITE_NULL) continue;
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s.stmt, i));
        row[static_cast<std::size_t>(i)] = std::string(text ? text : "");
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

  int64_t execute(const std::string& sql, const std::vector<Value>& params) override {
    Statement s(*this, sql, params);
    for (int rc; (rc = sqlite3_step(s.stmt)) != SQLITE_DONE;) {
      if (rc != SQLITE_ROW) fail(sql);  // a PRAGMA answers with a row
    }
    return sqlite3_changes64(db_);
  }

  // Another process may hold the write lock for longer than the busy timeout (a long transaction,
  // a backup, a user's sqlite3 shell): waiting a while longer beats losing a trial's result.
  void begin_write() override {
    const auto start = std::chrono::steady_clock::now();
    for (int attempt = 1;; ++attempt) {
      try {
        execute("BEGIN IMMEDIATE", {});
        return;
      } catch (const std::runtime_error&) {
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const int code = sqlite3_errcode(db_);
        if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) || waited >= kMaxLockWaitS) {
          if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
            throw std::runtime_error(path_ + ": another process held the storage's write lock for " +
                                     std::to_string(static_cast<int>(waited)) + " s; gave up waiting");
          }
          throw;
        }
        spdlog::warn("{}: another process holds the storage's write lock ({} s so far); waiting", path_,
                     static_cast<int>(waited));
      }
    }
  }
  void commit() override { execute("COMMIT", {}); }
  void rollback() noexcept override { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }
  std::string now_expression() const override { return "((julianday('now') - 2440587.5) * 86400.0)"; }
  const std::string& where() const override { return path_; }

 private:
  [[noreturn]] void fail(const std::string& sql) const {
    throw std::runtime_error(path_ + ": " + sqlite3_errmsg(db_) + " (in: " + sql.substr(0, 60) + ")");
  }

  struct Statement {
    Statement(SqliteConnection& c, const std::string& sql, const std::vector<Value>& params) {
      if (sqlite3_prepare_v2(c.db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) c.fail(sql);
      for (std::size_t i = 0; i < params.size(); ++i) {
        const int at = static_cast<int>(i) + 1;
        if (const auto* v = std::get_if<int64_t>(&params[i]))
          sqlite3_bind_int64(stmt, at, *v);
        else if (const auto* d = std::get_if<double>(&params[i]))
          sqlite3_bind_double(stmt, at, *d);
        else if (const auto* s = std::get_if<std::string>(&params[i]))
          sqlite3_bind_text(stmt, at, s->c_str(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
        else
          sqlite3_bind_null(stmt, at);
      }
    }
    ~Statement() { sqlite3_finalize(stmt); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    sqlite3_stmt* stmt = nullptr;
  };

  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace

std::unique_ptr<Connection> open_sqlite(const std::string& path) { return std::make_unique<SqliteConnection>(path); }

}  // namespace baton::sql
