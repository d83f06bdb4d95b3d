// CSV lines (src/io/csv.cpp) as RFC 4180 writes them: quoted fields unquoted, doubled quotes single.
#include "baton/io/csv.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace baton {
namespace {

using Fields = std::vector<std::string>;

TEST(CsvFields, SplitsAtCommasOutsideQuotes) {
  EXPECT_EQ(csv_fields("a,b,c"), (Fields{"a", "b", "c"}));
  EXPECT_EQ(csv_fields(""), (Fields{""}));
  EXPECT_EQ(csv_fields("a,,"), (Fields{"a", "", ""}));
  EXPECT_EQ(csv_fields("step,train/loss"), (Fields{"step", "train/loss"}));
}

TEST(CsvFields, QuotedFieldsKeepCommasAndDoubledQuotes) {
  EXPECT_EQ(csv_fields(R"("a,b",c)"), (Fields{"a,b", "c"}));
  EXPECT_EQ(csv_fields(R"("say ""hi""",2)"), (Fields{R"(say "hi")", "2"}));
  EXPECT_EQ(csv_fields(R"("",x)"), (Fields{"", "x"}));
  EXPECT_EQ(csv_fields(R"(1,"{""lr"": 0.1, ""opt"": ""sgd""}")"), (Fields{"1", R"({"lr": 0.1, "opt": "sgd"})"}));
}

}  // namespace
}  // namespace baton
