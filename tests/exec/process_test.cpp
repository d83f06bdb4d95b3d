#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "baton/exec/process.h"
#include "baton/io/file.h"
#include "common/test_util.h"

namespace baton {
namespace {

ProcessEngineOptions with(std::string command, int workers = 2) {
  ProcessEngineOptions o;
  o.command(std::move(command));
  o.workers(workers);
  o.kill_grace_s(0.3);
  return o;
}

TEST(TrialProtocol, ParsesBatonLinesAndRejectsMalformedOnes) {
  EXPECT_FALSE(parse_protocol_line("epoch 3 loss 0.2"));
  EXPECT_EQ((*parse_protocol_line(R"(baton: {"final": 0.93})"))["final"], 0.93);
  EXPECT_EQ((*parse_protocol_line(R"(baton: {"intermediate": 0.7, "step": 3})"))["step"], 3);
  EXPECT_THROW(parse_protocol_line("baton: {final: 1}"), std::invalid_argument);
  EXPECT_THROW(parse_protocol_line(R"(baton: {"final": "high"})"), std::invalid_argument);
  EXPECT_THROW(parse_protocol_line(R"(baton: {"final": 1, "intermediate": 2})"), std::invalid_argument);
  EXPECT_THROW(parse_protocol_line(R"(baton: {"intermediate": 1, "step": 1.5})"), std::invalid_argument);
}

TEST(TrialProtocol, SeveralObjectivesAndConstraintsAreListsOfFiniteNumbers) {
  const auto j = *parse_protocol_line(R"(baton: {"final": [0.9, 12000], "constraints": [3.5, -1]})");
  EXPECT_EQ(j["final"][1], 12000);
  EXPECT_EQ(j["constraints"][0], 3.5);
  for (const char* bad : {R"(baton: {"final": []})", R"(baton: {"final": [1, "a"]})", R"(baton: {"final": [[1]]})",
                          R"(baton: {"final": 1, "constraints": 2})", R"(baton: {"final": 1, "constraints": []})",
                          R"(baton: {"intermediate": 1, "constraints": [1]})", R"(baton: {"final": [1, 1e999]})"}) {
    EXPECT_THROW(parse_protocol_line(bad), std::invalid_argument) << bad;
  }
}

TEST(ProcessEngine, AFinalLineOfAnotherCountFailsTheTrialSayingWhatTheSearchExpects) {
  auto o = with(R"(case $BATON_TRIAL_ID in
                     0) echo 'baton: {"final": [0.5, 7], "constraints": [2]}' ;;
                     1) echo 'baton: {"final": 0.5}' ;;
                     *) echo 'baton: {"final": [0.5, 7]}' ;;
                   esac)");
  o.objectives(2);
  o.constraints(1);
  ProcessEngine engine(o);
  for (int i = 0; i < 3; ++i) engine.submit({{"i", i}});
  ASSERT_TRUE(engine.wait({}, 30.0));
  const auto ok = *engine.get(0);
  EXPECT_EQ(ok.status, TrialStatus::kTrained) << ok.error;
  EXPECT_EQ(ok.metrics.values, (std::vector<double>{0.5, 7}));
  EXPECT_EQ(ok.metrics.constraints, (std::vector<double>{2}));
  for (int64_t id : {1, 2}) {
    const auto t = *engine.get(id);
    EXPECT_EQ(t.status, TrialStatus::kFailed);
    EXPECT_NE(
        t.error.find(R"(the search expects {"final": [2 values, in the order of --objective], "constraints": [1)"),
        std::string::npos)
        << t.error;
  }
}

TEST(TrialProtocol, StepsAreWholeNumbersAnInt64HoldsKeptExactly) {
  EXPECT_EQ((*parse_protocol_line(R"(baton: {"intermediate": 1, "step": 9223372036854775807})"))["step"].get<int64_t>(),
            INT64_MAX);
  for (const char* bad :
       {R"(baton: {"intermediate": 1, "step": 18446744073709551615})",
        R"(baton: {"intermediate": 1, "step": 9223372036854775808})", R"(baton: {"intermediate": 1, "step": -1})",
        R"(baton: {"final": 1e999})", R"(baton: {"intermediate": -1e400})"}) {
    EXPECT_THROW(parse_protocol_line(bad), std::invalid_argument) << bad;
  }
}

// A trial ends when its process ends: a background child still holding stdout is stopped with the
// trial's process group, not waited for.
TEST(ProcessEngine, ATrialEndsWhenItsProcessEndsThoughAChildHoldsItsOutput) {
  ProcessEngine engine(with(R"((sleep 60; echo late) &
                               echo 'baton: {"intermediate": 1, "step": 9223372036854775807}'
                               echo 'baton: {"intermediate": 2}'
                               echo 'baton: {"final": 0.5}')"));
  const auto start = std::chrono::steady_clock::now();
  const auto id = engine.submit({{"x", 1}});
  ASSERT_TRUE(engine.wait({}, 30.0));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  const auto t = *engine.get(id);
  EXPECT_EQ(t.status, TrialStatus::kTrained) << t.error;
  EXPECT_EQ(*t.metrics.final, 0.5);
  // The step after the last, saturated (not wrapped): the same step, whose value the new one replaces.
  ASSERT_EQ(t.metrics.intermediate.size(), 1U);
  EXPECT_EQ(t.metrics.intermediate[0].step, INT64_MAX);
  EXPECT_EQ(t.metrics.intermediate[0].value, 2.0);
}

// A listener that cannot record a value (a storage locked too long) does not make the trial fail:
// the process's outcome stands.
TEST(ProcessEngine, AListenerThatFailsDoesNotFailAFinishedTrial) {
  ProcessEngine engine(with(R"(echo 'baton: {"final": 0.25}')"));
  std::atomic<int> failures{0};
  engine.set_observer([&](const Trial& t) {
    if (t.metrics.final && t.status == TrialStatus::kRunning && failures++ == 0) {
      throw std::runtime_error("search.db: database is locked");
    }
  });
  const auto id = engine.submit({{"x", 1}});
  ASSERT_TRUE(engine.wait({}, 30.0));
  const auto t = *engine.get(id);
  EXPECT_EQ(failures.load(), 1);
  EXPECT_EQ(t.status, TrialStatus::kTrained) << t.error;
  EXPECT_EQ(*t.metrics.final, 0.25);
}

TEST(ProcessEngine, ACommandGetsItsParametersAndReportsMetrics) {
  const baton::testing::TempDir logs_tmp("process");
  const std::filesystem::path logs = logs_tmp.path();
  auto o = with(R"(echo "got $BATON_TRIAL_PARAMETERS"
                   echo 'baton: {"intermediate": 0.5, "step": 1}'
                   echo 'baton: {"intermediate": 0.75}'
                   printf 'baton: {"final": %s}' "$BATON_TRIAL_ID")");
  o.log_dir(logs);
  ProcessEngine engine(o);
  const auto a = engine.submit({{"lr", 0.1}});
  const auto b = engine.submit({{"lr", 0.2}});
  ASSERT_TRUE(engine.wait({}, 30.0));
  for (auto id : {a, b}) {
    const auto t = *engine.get(id);
    EXPECT_EQ(t.status, TrialStatus::kTrained) << t.error;
    EXPECT_EQ(*t.metrics.final, static_cast<double>(id));  // the last line had no newline
    ASSERT_EQ(t.metrics.intermediate.size(), 2U);
    EXPECT_EQ(t.metrics.intermediate[1].step, 2);  // a line without a step: the one after the last
  }
  std::ifstream log(logs / std::to_string(b) / "stdout.log");
  std::string first;
  std::getline(log, first);
  EXPECT_EQ(first, R"(got {"lr":0.2})");
  baton::remove_tree(logs);
}

TEST(ProcessEngine, CrashesTimeoutsAndKillsEndTheTrialNotTheSearch) {
  auto o = with(R"(case "$BATON_TRIAL_PARAMETERS" in
      *crash*) echo 'CUDA out of memory' >&2; exit 3 ;;
      *segv*) kill -SEGV $$ ;;
      *hang*) sleep 30 ;;
      *stubborn*) trap '' TERM; sleep 30 ;;
      *silent*) exit 0 ;;
      *garbage*) echo 'baton: {final: 1}'; exit 0 ;;
    esac)",
                4);
  o.timeout_s(1.0);
  ProcessEngine engine(o);
  const auto crash = engine.submit({{"kind", "crash"}});
  const auto segv = engine.submit({{"kind", "segv"}});
  const auto hang = engine.submit({{"kind", "hang"}});
  const auto silent = engine.submit({{"kind", "silent"}});
  const auto garbage = engine.submit({{"kind", "garbage"}});
  const auto stubborn = engine.submit({{"kind", "stubborn"}});
  const auto t0 = std::chrono::steady_clock::now();
  while (engine.get(stubborn)->status != TrialStatus::kRunning)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  engine.kill(stubborn);
  ASSERT_TRUE(engine.wait({}, 20.0));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_EQ(engine.get(crash)->status, TrialStatus::kFailed);
  EXPECT_EQ(engine.get(crash)->error, "exit status 3; stderr: CUDA out of memory");
  EXPECT_EQ(engine.get(segv)->status, TrialStatus::kFailed);
  EXPECT_NE(engine.get(segv)->error.find("signal 11"), std::string::npos) << engine.get(segv)->error;
  EXPECT_EQ(engine.get(hang)->status, TrialStatus::kFailed);
  EXPECT_NE(engine.get(hang)->error.find("timed out after 1"), std::string::npos);
  EXPECT_EQ(engine.get(silent)->status, TrialStatus::kFailed);
  EXPECT_NE(engine.get(silent)->error.find("without printing"), std::string::npos);
  EXPECT_EQ(engine.get(garbage)->status, TrialStatus::kFailed);
  EXPECT_NE(engine.get(garbage)->error.find("trial protocol: not JSON"), std::string::npos);
  EXPECT_EQ(engine.get(stubborn)->status, TrialStatus::kInterrupted);  // SIGKILL after the grace period
}

TEST(ProcessEngine, RunsNAtOnceAndShutdownStopsTheRest) {
  ProcessEngine engine(with("sleep 30", 2));
  for (int i = 0; i < 4; ++i) engine.submit({{"i", i}});
  EXPECT_EQ(engine.idle_workers(), 0);
  while (engine.list(TrialStatus::kRunning).size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(engine.list(TrialStatus::kWaiting).size(), 2U);
  engine.shutdown();
  EXPECT_EQ(engine.list(TrialStatus::kInterrupted).size(), 4U);
}

TEST(TrialSlots, DevicesAreDealtPerTrialAndThreadsGetCoresOfTheirOwn) {
  const auto slots = make_trial_slots({"0", "1", "2", "3", "4"}, 2, 0, 0, {0});
  ASSERT_EQ(slots.size(), 2U);  // the fifth device is left over
  EXPECT_EQ(slots[0].devices, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(slots[1].devices, (std::vector<std::string>{"2", "3"}));
  const auto cpu = make_trial_slots({}, 1, 2, 2, {4, 5, 6, 7});
  ASSERT_EQ(cpu.size(), 2U);
  EXPECT_EQ(cpu[1].cpus, (std::vector<int>{6, 7}));
  EXPECT_EQ(cpu[1].threads, 2);
  EXPECT_EQ(testing::error_of([] {
              make_trial_slots({"0", "1", "0"}, 1, 0, 0, {0});
            }),
            "--devices: device 0 is named twice");
  EXPECT_EQ(testing::error_of([] {
              make_trial_slots({"0", "1"}, 3, 0, 0, {0});
            }),
            "--devices-per-trial 3: expected 1 to 2 (the number of --devices)");
  // What CUDA_VISIBLE_DEVICES would read as no device at all (every trial on the CPU, silently).
  for (const std::string junk : {"-1", "gpu0", "01", "1024", "0x1", "GPU-", "GPU-zz"}) {
    EXPECT_THAT(testing::error_of([&] {
                  make_trial_slots({"0", junk}, 1, 0, 0, {0});
                }),
                ::testing::HasSubstr("--devices: '" + junk + "' is not a device (an index such as 0, or a GPU-"))
        << junk;
  }
  EXPECT_EQ(make_trial_slots({"GPU-8f6e9f3c-1b2a-4c5d", "MIG-0a1b/1/0"}, 1, 0, 0, {0}).size(), 2U);
  EXPECT_EQ(testing::error_of([] {
              make_trial_slots({}, 1, 2, 3, {0, 1, 2, 3});
            }),
            "--threads-per-trial 2 for 3 trials at once needs 6 cores; this machine has 4 (fewer threads, or fewer "
            "trials at once)");
}

// The property: trials of random durations, some failing and some killed by a signal, in slots of
// devices: two trials that run at the same time never share a device, each sees exactly its slot's
// devices (CUDA_VISIBLE_DEVICES replaced, not added to), and a trial that ends however it ends
// frees its slot for the next.
TEST(ProcessEngine, TrialsInSlotsNeverShareADeviceHoweverTheyEnd) {
  const baton::testing::TempDir dir("slots");
  ::setenv("CUDA_VISIBLE_DEVICES", "9", 1);  // the search's own: never a trial's
  const std::vector<std::string> devices = {"0", "1", "2", "3", "4", "5"};
  for (int per : {1, 2, 3}) {
    auto o = with(R"sh(d="$DIR/$BATON_TRIAL_ID"
                     echo "$CUDA_VISIBLE_DEVICES $BATON_TRIAL_DEVICES $BATON_TRIAL_SLOT $(date +%s%N)" >"$d.start"
                     p=$BATON_TRIAL_PARAMETERS; s=${p#*\"s\":\"}; s=${s%%\"*}; e=${p#*\"e\":\"}; e=${e%%\"*}
                     sleep "$s"
                     date +%s%N >"$d.end"
                     case "$e" in fail) exit 1 ;; signal) kill -9 $$ ;; esac
                     echo 'baton: {"final": 1}')sh",
                  100);
    o.env()["DIR"] = dir.path().string();
    o.slots(make_trial_slots(devices, per, 0, 0, {0}));
    ProcessEngine engine(o);
    std::mt19937 rng(static_cast<unsigned>(per));
    std::map<int64_t, std::string> ends;
    for (int i = 0; i < 18; ++i) {
      const std::string end = std::vector<std::string>{"ok", "ok", "fail", "signal"}[rng() % 4];
      const double seconds = static_cast<double>(rng() % 80) / 1000.0;
      ends[engine.submit({{"s", std::to_string(seconds)}, {"e", end}})] = end;
    }
    ASSERT_TRUE(engine.wait({}, 60.0));
    struct Span {
      std::set<std::string> devices;
      int64_t start, end;
    };
    std::vector<Span> spans;
    for (const auto& [id, end] : ends) {
      const Trial t = *engine.get(id);
      EXPECT_EQ(t.status, end == "ok" ? TrialStatus::kTrained : TrialStatus::kFailed) << id << " " << t.error;
      std::istringstream start(testing::read_file(dir.path() / (std::to_string(id) + ".start")));
      std::string visible, named;
      int slot = -1;
      int64_t began = 0;
      start >> visible >> named >> slot >> began;
      EXPECT_EQ(visible, named);
      std::string want;
      for (int k = 0; k < per; ++k) want += (k ? "," : "") + devices[static_cast<size_t>(slot * per + k)];
      EXPECT_EQ(visible, want) << "trial " << id << " in slot " << slot;
      Span span{{}, began, std::stoll(testing::read_file(dir.path() / (std::to_string(id) + ".end")))};
      for (size_t at = 0; at != std::string::npos;) {
        const size_t comma = visible.find(',', at);
        span.devices.insert(visible.substr(at, comma == std::string::npos ? comma : comma - at));
        at = comma == std::string::npos ? comma : comma + 1;
      }
      EXPECT_EQ(span.devices.size(), static_cast<size_t>(per));
      spans.push_back(span);
    }
    for (size_t a = 0; a < spans.size(); ++a) {
      for (size_t b = a + 1; b < spans.size(); ++b) {
        if (spans[a].end < spans[b].start || spans[b].end < spans[a].start) continue;  // not at once
        for (const auto& device : spans[a].devices) EXPECT_EQ(spans[b].devices.count(device), 0U) << device;
      }
    }
  }
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

// --threads-per-trial: each trial's process runs on its slot's cores only (its CPU affinity) with
// its thread count in the environment.
TEST(ProcessEngine, ATrialInACpuSlotRunsOnItsCoresOnly) {
  const auto cpus = usable_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one usable CPU";
  const baton::testing::TempDir dir("cpu-slots");
  auto o = with(R"(grep Cpus_allowed_list /proc/self/status | cut -f2 >"$DIR/$BATON_TRIAL_SLOT"
                   echo "$OMP_NUM_THREADS $BATON_TRIAL_CPUS" >>"$DIR/$BATON_TRIAL_SLOT"; sleep 0.2
                   echo 'baton: {"final": 1}')",
                2);
  o.env()["DIR"] = dir.path().string();
  o.slots(make_trial_slots({}, 1, 1, 2, cpus));
  ProcessEngine engine(o);
  engine.submit({{"i", 0}});
  engine.submit({{"i", 1}});
  ASSERT_TRUE(engine.wait({}, 30.0));
  for (int slot : {0, 1}) {
    const std::string cpu = std::to_string(cpus[static_cast<size_t>(slot)]);
    EXPECT_EQ(testing::read_file(dir.path() / std::to_string(slot)), cpu + "\n1 " + cpu + "\n");
  }
}

}  // namespace
}  // namespace baton
