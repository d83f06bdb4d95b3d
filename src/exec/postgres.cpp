// The PostgreSQL connection of the trial storage (libpq): '?' placeholders become $1, $2, ...;
// write transactions take one advisory lock, so claims of work from several machines are serial.
#include <stdexcept>

#include "baton/exec/storage.h"
#include "exec/sql.h"

#ifdef BATON_HAVE_LIBPQ
#include <libpq-fe.h>

#include <cstdio>
#endif

namespace baton::sql {

#ifdef BATON_HAVE_LIBPQ
namespace {

constexpr const char* kLockKey = "7301264907";  // the advisory lock that serialises baton's claims

// libpq's messages span lines ("...failed: Connection refused\n\tIs the server running..."): one line.
std::string joined_lines(std::string why) {
  std::string out;
  for (char c : why) {
    if (c == '\n' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out += out.back() == ';' ? " " : "; ";
    } else {
      out += c;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}

class PostgresConnection : public Connection {
 public:
  explicit PostgresConnection(const std::string& url) : url_(redact_storage_url(url)) {
    conn_ = PQconnectdb(url.c_str());
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = joined_lines(PQerrorMessage(conn_));
      PQfinish(conn_);
      conn_ = nullptr;
      throw std::runtime_error(url_ + ": cannot connect: " + why);
    }
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);  // "already exists, skipping"
  }
  ~PostgresConnection() override { PQfinish(conn_); }
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  std::vector<Row> query(const std::string& sql, const std::vector<Value>& params) override {
    Result r = run(sql, params);
    std::vector<Row> rows(static_cast<std::size_t>(PQntuples(r.get())));
    const int columns = PQnfields(r.get());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      rows[i].resize(static_cast<std::size_t>(columns));
      for (int c = 0; c < columns; ++c) {
        if (!PQgetisnull(r.get(), static_cast<int>(i), c))
          rows[i][static_cast<std::size_t>(c)] = std::string(PQgetvalue(r.get(), static_cast<int>(i), c));
      }
    }
    return rows;
  }

  int64_t execute(const std::string& sql, const std::vector<Value>& params) override {
    Result r = run(sql, params);
    const char* n = PQcmdTuples(r.get());
    return n && *n ? std::stoll(n) : 0;
  }

  void begin_write() override {
    execute("BEGIN", {});
    try {
      query(std::string("SELECT pg_advisory_xact_lock(") + kLockKey + ")", {});
    } catch (...) {
      rollback();
      throw;
    }
  }
  void commit() override { execute("COMMIT", {}); }
  void rollback() noexcept override { PQclear(PQexec(conn_, "ROLLBACK")); }
  std::string now_expression() const override { return "extract(epoch from clock_timestamp())::double precision"; }
  const std::string& where() const override { return url_; }

 private:
  struct Clear {
    void operator()(PGresult* r) const { PQclear(r); }
  };
  using Result = std::unique_ptr<PGresult, Clear>;

  Result run(const std::string& sql, const std::vector<Value>& params) {
    std::string text;
    int n = 0;
    for (char c : sql) text += c == '?' ? "$" + std::to_string(++n) : std::string(1, c);
    std::vector<std::string> values(params.size());
    std::vector<const char*> pointers(params.size(), nullptr);
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (const auto* v = std::get_if<int64_t>(&params[i]))
        values[i] = std::to_string(*v);
      else if (const auto* d = std::get_if<double>(&params[i])) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", *d);
        values[i] = buf;
      } else if (const auto* s = std::get_if<std::string>(&params[i]))
        values[i] = *s;
      else
        continue;
      pointers[i] = values[i].c_str();
    }
    Result r(PQexecParams(conn_, text.c_str(), static_cast<int>(params.size()), nullptr, pointers.data(), nullptr,
                          nullptr, 0));
    const auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      const std::string why = joined_lines(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_));
      throw std::runtime_error(url_ + ": " + why + " (in: " + sql.substr(0, 60) + ")");
    }
    return r;
  }

  std::string url_;
  PGconn* conn_ = nullptr;
};

}  // namespace

std::unique_ptr<Connection> open_postgres(const std::string& url) { return std::make_unique<PostgresConnection>(url); }
#else
std::unique_ptr<Connection> open_postgres(const std::string& url) {
  throw std::runtime_error(url +
                           ": this baton was built without PostgreSQL's client library (install libpq-dev and "
                           "rebuild); use sqlite:///PATH.db");
}
#endif

}  // namespace baton::sql
