// A small SQL connection interface (private to exec): the trial storage is written once against
// it and runs on SQLite and PostgreSQL. Statements use '?' placeholders; values are bound typed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace baton::sql {

using Value = std::variant<std::monostate, int64_t, double, std::string>;
using Row = std::vector<std::optional<std::string>>;  // columns as text; nullopt = NULL

class Connection {
 public:
  virtual ~Connection() = default;
  // Runs one statement; returns its rows (none for a statement without results).
  virtual std::vector<Row> query(const std::string& sql, const std::vector<Value>& params = {}) = 0;
  // Runs one statement; returns the number of rows it changed.
  virtual int64_t execute(const std::string& sql, const std::vector<Value>& params = {}) = 0;
  // Starts a transaction that holds the write lock until commit (SQLite: BEGIN IMMEDIATE;
  // PostgreSQL: BEGIN and a transaction-level advisory lock), so read-modify-write claims of
  // work are serialised across processes and machines.
  virtual void begin_write() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;
  // An SQL expression for the database server's clock in seconds since the Unix epoch (one clock
  // for every worker, whatever their machines' clocks say).
  virtual std::string now_expression() const = 0;
  // Where the storage is, for error messages.
  virtual const std::string& where() const = 0;
};

std::unique_ptr<Connection> open_sqlite(const std::string& path);
// Throws std::runtime_error when this build has no PostgreSQL client library.
std::unique_ptr<Connection> open_postgres(const std::string& url);

// begin_write() ... commit(), rolled back when the body throws.
template <typename F>
auto write_transaction(Connection& c, F body) {
  c.begin_write();
  try {
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      c.commit();
    } else {
      auto result = body();
      c.commit();
      return result;
    }
  } catch (...) {
    c.rollback();
    throw;
  }
}

}  // namespace baton::sql
