#include "baton/core/options.h"

#include "common/test_util.h"

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace baton {
namespace {

using ::testing::ElementsAre;
using testing::error_of;

TEST(OptionReader, ReadsTypedValuesAndKeepsTheDefaults) {
  OptionReader r("mixup", {{"alpha", 0.4},
                           {"steps", 3},
                           {"on", true},
                           {"mode", "fast"},
                           {"every", "50ba"},
                           {"widths", {8, 16}},
                           {"at", {"1ep", "2ep"}},
                           {"blank", nullptr}});
  double alpha = 1.0, beta = 2.0;
  int64_t steps = 0;
  bool on = false;
  std::string mode;
  Time every = Time::from_epoch(1);
  std::vector<int64_t> widths;
  r.read("alpha", alpha);
  r.read("beta", beta);  // absent: the default stays
  r.read("steps", steps);
  r.read("on", on);
  r.read("mode", mode);
  r.read("every", every);
  r.read("widths", widths);
  EXPECT_EQ(alpha, 0.4);
  EXPECT_EQ(beta, 2.0);
  EXPECT_EQ(steps, 3);
  EXPECT_TRUE(on);
  EXPECT_EQ(mode, "fast");
  EXPECT_EQ(every, Time::parse("50ba"));
  EXPECT_THAT(widths, ElementsAre(8, 16));
  EXPECT_THAT(r.get<std::vector<Time>>("at", {}), ElementsAre(Time::parse("1ep"), Time::parse("2ep")));
  EXPECT_EQ(r.get<double>("blank", 7.0), 7.0);  // null is absent
  EXPECT_NO_THROW(r.finish());
}

TEST(OptionReader, NamesTheKeyAndTheValueItRefuses) {
  const nlohmann::json json = {{"alpha", "high"}, {"n", 2.5},           {"big", int64_t{1000000000000}},
                               {"nan", NAN},      {"list", {1, "two"}}, {"every", "soon"},
                               {"flag", 1},       {"word", {{"a", 1}}}, {"neg", -1}};
  OptionReader r("mixup", json);
  EXPECT_EQ(error_of([&] { r.number("alpha", 0); }), "mixup.alpha: expected a number, got 'high'");
  EXPECT_EQ(error_of([&] { r.integer("n", 0); }), "mixup.n: expected a whole number, got '2.5'");
  EXPECT_EQ(error_of([&] { r.get<int>("big", 0); }),
            "mixup.big: expected a whole number that fits, got '1000000000000'");
  EXPECT_EQ(error_of([&] { r.get<uint64_t>("neg", 0); }), "mixup.neg: expected a whole number that fits, got '-1'");
  EXPECT_EQ(error_of([&] { r.number("nan", 0); }), "mixup.nan: expected a finite number, got '.nan'");
  EXPECT_EQ(error_of([&] { r.get<std::vector<int64_t>>("list", {}); }),
            "mixup.list: expected a whole number, got 'two'");
  EXPECT_EQ(error_of([&] { r.time("every", Time::from_epoch(1)); }).rfind("mixup.every: ", 0), 0U);
  EXPECT_EQ(error_of([&] { r.boolean("flag", false); }), "mixup.flag: expected true or false, got '1'");
  EXPECT_EQ(error_of([&] { r.text("word", ""); }), "mixup.word: expected a string, got '{\"a\":1}'");
  EXPECT_EQ(r.text("neg", ""), "-1");  // a number where text is wanted: as written
  int bounded = 0;
  EXPECT_EQ(error_of([&] { r.read("neg", bounded, 0, 10); }),
            "mixup.neg: expected a whole number from 0 to 10, got '-1'");
  try {
    r.number("alpha", 0);
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(e.key(), "alpha");
  }
  EXPECT_EQ(error_of([] { OptionReader("tpe", 5); }), "tpe: expected a mapping of keys to values, got '5'");
  EXPECT_EQ(OptionReader::shown(std::string(200, 'x')).size(), 80U);
}

TEST(OptionReader, ReadsEveryWholeNumberItsTypeHoldsExactly) {
  const nlohmann::json json = {{"top", std::numeric_limits<uint64_t>::max()},
                               {"above", uint64_t{1} << 63},
                               {"least", std::numeric_limits<int64_t>::min()},
                               {"byte", 255},
                               {"small", -128}};
  OptionReader r("run", json);
  EXPECT_EQ(r.get<uint64_t>("top", 0), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(r.get<uint64_t>("above", 0), uint64_t{1} << 63);
  EXPECT_EQ(r.get<int64_t>("least", 0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(r.get<uint8_t>("byte", 0), 255);
  EXPECT_EQ(r.get<int8_t>("small", 0), -128);
  EXPECT_EQ(error_of([&] { r.get<int64_t>("above", 0); }),
            "run.above: expected a whole number that fits, got '9223372036854775808'");
  EXPECT_EQ(error_of([&] { r.get<int8_t>("byte", 0); }), "run.byte: expected a whole number that fits, got '255'");
  EXPECT_EQ(error_of([&] { r.get<uint64_t>("least", 0); }).rfind("run.least: expected a whole number that fits", 0),
            0U);
}

TEST(OptionReader, ATypoOfAKnownNameIsSaidAsDidYouMean) {
  EXPECT_EQ(unknown_name("scheduler", "cosine_with_warmup", {"cosine", "cosine_warmup", "one_cycle"}),
            "unknown scheduler 'cosine_with_warmup' (known: cosine, cosine_warmup, one_cycle); did you mean "
            "'cosine_warmup'?");
  EXPECT_EQ(unknown_name("logger", "xml", {"csv", "jsonl"}), "unknown logger 'xml' (known: csv, jsonl)");
  EXPECT_EQ(closest_name("Max_Duration", {"max_duration", "seed"}), "max_duration");  // case aside
  EXPECT_EQ(closest_name("lr", {"seed", "device"}), "");
  const OptionReader r("optimizer", {{"nme", "sgd"}});
  EXPECT_EQ(error_of([&] {
              r.check_keys({"name", "lr"});
            }),
            "unknown key 'optimizer.nme' (known in optimizer: name, lr); did you mean 'name'?");
}

TEST(OptionReader, AccountsForEveryKey) {
  OptionReader r("mixup", {{"alpha", 0.4}, {"alpah", 0.2}});
  r.number("alpha", 0);
  r.boolean("interpolate_loss", false);
  EXPECT_EQ(error_of([&] { r.finish(); }),
            "mixup.alpah: unknown option (known: alpha, interpolate_loss); did you mean 'alpha'?");  // swapped
  const OptionReader listed("data", {{"batch_size", 1}, {"bach", 2}});
  EXPECT_EQ(error_of([&] {
              listed.check_keys({"batch_size", "shuffle"});
            }),
            "unknown key 'data.bach' (known in data: batch_size, shuffle)");
}

// An origin as a recipe file's: where each path was written, its own error type, its own order.
class FakeOrigin : public OptionOrigin {
 public:
  std::string where(const std::vector<std::string>& path, bool at_key) const override {
    std::string out = "r.yaml";
    for (const auto& p : path) out += "/" + p;
    return out + (at_key ? "(key)" : "");
  }
  std::vector<std::string> order(const std::vector<std::string>& path) const override {
    if (path.empty()) return {"zeta", "alpha"};
    return {};
  }
  [[noreturn]] void raise(const std::string& key, const std::string& message) const override {
    throw std::runtime_error("origin[" + key + "] " + message);
  }
};

TEST(OptionReader, AnOriginPlacesEveryMessageAndKeepsTheWrittenOrder) {
  const nlohmann::json json = {{"zeta", {{"lr", "fast"}, {"momentum", 0.9}}}, {"alpha", 5}};
  OptionReader top(json, std::make_shared<FakeOrigin>());
  EXPECT_THAT(top.keys(), ElementsAre("zeta", "alpha"));  // as written, not sorted
  OptionReader zeta = top.child("zeta");
  EXPECT_EQ(zeta.dotted("lr"), "zeta.lr");
  EXPECT_EQ(error_of([&] { zeta.number("lr", 0); }),
            "origin[lr] r.yaml/zeta/lr: zeta.lr: expected a number, got 'fast'");
  EXPECT_EQ(error_of([&] { zeta.fail_at_key("momentum", "no"); }),
            "origin[momentum] r.yaml/zeta/momentum(key): zeta.momentum: no");
  EXPECT_EQ(error_of([&] { zeta.fail_self("lr must be positive", "lr"); }),
            "origin[lr] r.yaml/zeta/lr: zeta: lr must be positive");
  EXPECT_EQ(error_of([&] { zeta.fail_self("refused"); }), "origin[] r.yaml/zeta: zeta: refused");
  EXPECT_EQ(error_of([&] { top.check_keys({"alpha"}); }),
            "origin[zeta] r.yaml/zeta(key): unknown key 'zeta' (known: alpha)");
  EXPECT_EQ(error_of([&] { top.child("alpha"); }),
            "origin[] r.yaml/alpha: alpha: expected a mapping of keys to values, got '5'");
  OptionReader absent = top.child("missing");  // an absent section reads as empty
  EXPECT_FALSE(absent.has("x"));
  EXPECT_EQ(absent.integer("x", 4), 4);
}

TEST(OptionReader, ZeroMeansNoneForATimeThatMayBeNever) {
  OptionReader r("loop", {{"every", 0}, {"also", "0"}, {"bad", 0}});
  EXPECT_EQ(r.time("also", Time::parse("1ep"), true), Time::from_epoch(0));
  EXPECT_EQ(r.time("every", Time::parse("1ep"), /*zero_means_none=*/true), Time::from_epoch(0));
  EXPECT_THAT(error_of([&] { r.time("bad", Time::parse("1ep")); }), ::testing::StartsWith("loop.bad: expected a time"));
}

}  // namespace
}  // namespace baton
