// The SQLite connection of the trial storage (src/exec/sqlite.cpp): typed values bound and read back,
// a transaction that throws rolled back, two connections to one file seeing each other's commits,
// and files that are no database named.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "exec/sql.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

TEST(Sqlite, ValuesAreBoundTypedAndReadBackAsText) {
  const testing::TempDir dir("sqlite");
  const auto db = sql::open_sqlite((dir.path() / "s.db").string());
  db->execute("CREATE TABLE t (id INTEGER, x REAL, name TEXT, note TEXT)");
  EXPECT_EQ(db->execute("INSERT INTO t VALUES (?, ?, ?, ?)", {int64_t{7}, 0.25, std::string("it's"), std::monostate{}}),
            1);
  const auto rows = db->query("SELECT id, x, name, note FROM t WHERE id = ?", {int64_t{7}});
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0][0], "7");
  EXPECT_EQ(std::stod(*rows[0][1]), 0.25);
  EXPECT_EQ(rows[0][2], "it's");  // bound, never spliced into the statement
  EXPECT_EQ(rows[0][3], std::nullopt);
  EXPECT_THAT(error_of([&] { db->query("SELECT nope FROM t"); }),
              ::testing::AllOf(HasSubstr("s.db: "), HasSubstr("no such column")));
}

TEST(Sqlite, AThrowingTransactionIsRolledBackAndCommitsAreSeenByOtherConnections) {
  const testing::TempDir dir("sqlite");
  const std::string path = (dir.path() / "s.db").string();
  const auto a = sql::open_sqlite(path);
  const auto b = sql::open_sqlite(path);
  a->execute("CREATE TABLE t (v INTEGER)");
  EXPECT_THROW(sql::write_transaction(*a,
                                      [&] {
                                        a->execute("INSERT INTO t VALUES (1)");
                                        throw std::runtime_error("the body failed");
                                      }),
               std::runtime_error);
  EXPECT_EQ(b->query("SELECT COUNT(*) FROM t")[0][0], "0");
  const int64_t changed = sql::write_transaction(*a, [&] { return a->execute("INSERT INTO t VALUES (2), (3)"); });
  EXPECT_EQ(changed, 2);
  EXPECT_EQ(b->query("SELECT SUM(v) FROM t")[0][0], "5");
  const double now = std::stod(*a->query("SELECT " + a->now_expression())[0][0]);
  EXPECT_GT(now, 1.7e9);  // seconds since the epoch, after 2023
}

TEST(Sqlite, WhatIsNoSqliteFileIsNamed) {
  const testing::TempDir dir("sqlite");
  EXPECT_THAT(error_of([&] { sql::open_sqlite(dir.path().string()); }),
              ::testing::AllOf(HasSubstr(dir.path().string()), HasSubstr("a storage is an SQLite file")));
  std::ofstream(dir.path() / "text.db") << std::string(4096, 'x');
  EXPECT_THAT(error_of([&] {
                const auto c = sql::open_sqlite((dir.path() / "text.db").string());
                c->query("SELECT 1");
              }),
              HasSubstr("text.db"));
}

}  // namespace
}  // namespace baton
