// Text made fit for a message (src/io/text.cpp): one line, control characters and bytes that are not
// UTF-8 written out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "baton/io/file.h"
#include "baton/io/text.h"
#include "baton/io/write.h"
#include "common/test_util.h"

namespace baton {
namespace {
namespace fs = std::filesystem;
using testing::error_of;

TEST(Text, OneLineWritesOutControlCharactersAndBytesThatAreNotUtf8) {
  EXPECT_EQ(one_line("plain text, caf\xc3\xa9"), "plain text, caf\xc3\xa9");
  EXPECT_EQ(one_line("\x1b[31mred\nnext\r\tend"), "\\x1b[31mred\\nnext\\r\\tend");
  EXPECT_EQ(one_line("caf\xe9 \x7f"), "caf\\xe9 \\x7f");
  EXPECT_EQ(one_line(std::string(300, 'a'), 10), std::string(10, 'a') + "...");
  EXPECT_EQ(valid_utf8_prefix("ok \xe2\x82\xac"), 6u);
  EXPECT_EQ(valid_utf8_prefix("ab\xff"), 2u);
  EXPECT_EQ(valid_utf8_prefix("a\xc3"), 1u);          // a sequence cut short
  EXPECT_EQ(valid_utf8_prefix("a\xed\xa0\x80"), 1u);  // a surrogate
  EXPECT_EQ(valid_utf8_prefix("a\xc0\xaf"), 1u);      // overlong
}

}  // namespace
}  // namespace baton
