// Table files (src/loggers/table_files.cpp): each table metric a CSV file named by its key, rewritten
// whole at each evaluation; a key that would leave the run folder is refused.
#include "baton/loggers/table_files.h"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;

TEST(TableFiles, TheCsvHasTruthInRowsPredictionsInColumnsAndQuotedLabels) {
  Table table;
  table.rows = {{5, 1}, {0, 4}};
  table.labels = {"T-shirt", "a, b"};
  EXPECT_EQ(table_csv(table), "true\\predicted,T-shirt,\"a, b\"\nT-shirt,5,1\n\"a, b\",0,4\n");
  Table unlabelled;
  unlabelled.rows = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  EXPECT_EQ(table_csv(unlabelled), "true\\predicted,0,1,2\n0,1,2,3\n1,4,5,6\n2,7,8,9\n");
  EXPECT_EQ(table_csv(Table{}), "true\\predicted\n");
}

TEST(TableFiles, EachKeyIsAFileInTheRunFolderRewrittenWhole) {
  const TempDir dir("tables");
  TableFiles files(dir.path());
  Table table;
  table.rows = {{1, 0}, {0, 1}};
  files.log_table("eval/val/confusion_matrix", table, 10);
  table.rows = {{2, 0}, {1, 1}};
  files.log_table("eval/val/confusion_matrix", table, 20);
  EXPECT_EQ(testing::read_file(dir.path() / "eval" / "val" / "confusion_matrix.csv"),
            "true\\predicted,0,1\n0,2,0\n1,1,1\n");
  for (const std::string key : {"../outside", "/etc/x", "", "eval/../../x"}) {
    EXPECT_THAT(error_of([&] { files.log_table(key, table, 30); }), HasSubstr("is not a relative name")) << key;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path().parent_path() / "outside.csv"));
}

}  // namespace
}  // namespace baton
