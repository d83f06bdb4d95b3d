// YAML and JSON read with bounds (src/core/yaml_json.cpp): "billion laughs" and deep nesting refused
// in milliseconds, bytes that are not printable UTF-8 refused where they are, YAML values as JSON.
#include "core/yaml_json.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "common/test_util.h"

namespace baton {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

TEST(YamlJson, AnchorsOfAnchorsAreCountedAsWhatTheyExpandToAndRefused) {
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  std::string previous = "a";
  for (char name = 'b'; name <= 'j'; ++name) {  // 10^9 values once expanded
    laughs += std::string(1, name) + ": &" + name + " [";
    for (int i = 0; i < 10; ++i) laughs += (i ? ", *" : "*") + previous;
    laughs += "]\n";
    previous = std::string(1, name);
  }
  EXPECT_THAT(error_of([&] { load_yaml(laughs, "bomb.yaml"); }),
              ::testing::AllOf(::testing::StartsWith("bomb.yaml:"), HasSubstr("more than 200000")));
  EXPECT_NO_THROW(load_yaml("a: &a [1, 2]\nb: [*a, *a]\n", "small.yaml"));
}

TEST(YamlJson, NestingDeeperThanTheLimitIsRefusedInYamlAndJson) {
  const std::string deep_yaml = std::string(150, '[') + std::string(150, ']');
  EXPECT_THAT(error_of([&] { load_yaml(deep_yaml, "deep.yaml"); }), HasSubstr("nested deeper than 100 levels"));
  const std::string deep_json = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(error_of([&] { parse_json(deep_json, "deep.json"); }), "deep.json: nested deeper than 100 levels");
  EXPECT_NO_THROW(parse_json(std::string(20, '[') + std::string(20, ']'), "ok.json"));
  EXPECT_THAT(error_of([&] { parse_json("[1, 2", "cut.json"); }), HasSubstr("cut.json: not valid JSON"));
  DocumentLimits narrow;
  narrow.max_depth = 3;
  EXPECT_THAT(error_of([&] { load_yaml("a: {b: {c: {d: 1}}}", "r.yaml", narrow); }), HasSubstr("deeper than 3"));
}

TEST(YamlJson, BytesThatAreNotPrintableUtf8AreRefusedWhereTheyAre) {
  EXPECT_EQ(error_of([] { load_yaml("a: 1\nb: caf\xe9\n", "r.yaml"); }), "r.yaml:2:7: not UTF-8 text");
  EXPECT_EQ(error_of([] { load_yaml("a: \x1b[31m\n", "r.yaml"); }),
            "r.yaml:1:4: a control character (0x1b); YAML is printable text");
  EXPECT_NO_THROW(load_yaml("name: caf\xc3\xa9\nx: 1\t\r\n", "ok.yaml"));  // tabs and CRLF are text
  EXPECT_THAT(error_of([] { load_yaml("a: [1, 2\n", "bad.yaml"); }),
              ::testing::AllOf(::testing::StartsWith("bad.yaml:"), HasSubstr("not valid YAML")));
}

TEST(YamlJson, ValuesBecomeJsonsTypesAndQuotedScalarsStayStrings) {
  const nlohmann::json j = yaml_to_json(load_yaml(
      "on: true\nn: 3\nbig: 18446744073709551615\nneg: -4\nx: 0.25\ns: hello\nq: \"3\"\nnone: null\nl: [1, a]\n"
      "m: {k: false}\n",
      "r.yaml"));
  EXPECT_EQ(j["on"], true);
  EXPECT_TRUE(j["n"].is_number_integer());
  EXPECT_EQ(j["n"], 3);
  EXPECT_EQ(j["big"].get<uint64_t>(), 18446744073709551615ULL);
  EXPECT_EQ(j["neg"], -4);
  EXPECT_DOUBLE_EQ(j["x"].get<double>(), 0.25);
  EXPECT_EQ(j["s"], "hello");
  EXPECT_EQ(j["q"], "3");
  EXPECT_TRUE(j["none"].is_null());
  EXPECT_EQ(j["l"], nlohmann::json::parse(R"([1, "a"])"));
  EXPECT_EQ(j["m"], nlohmann::json::parse(R"({"k": false})"));
}

}  // namespace
}  // namespace baton
