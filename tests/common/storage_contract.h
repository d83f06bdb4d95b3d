// The contract every TrialStorage keeps, checked against SQLite (tests/exec/storage_test.cpp, label
// unit) and PostgreSQL (tests/exec/postgres_test.cpp, label postgres) by the same code: trials
// saved and loaded whole, meta values, and the shared work queue.
#pragma once

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "baton/exec/storage.h"

namespace baton::testing {

// A trial is saved whole and loaded as it was; saving it again replaces it; trials load by id.
inline void check_trials_round_trip(TrialStorage& s) {
  EXPECT_TRUE(s.load_trials().empty());
  EXPECT_FALSE(s.load_trial(7).has_value());
  Trial t;
  t.id = 7;
  t.parameters = {{"lr", 0.01}, {"optimizer", {{"_name", "sgd"}, {"momentum", 0.9}}}, {"name", "a \"quoted\" é"}};
  t.status = TrialStatus::kRunning;
  t.metrics.intermediate = {{1, 0.25}, {2, -1.5e-300}, {10, 1e300}};
  t.submitted_at = 1700000000.25;
  t.started_at = 1700000001.5;
  t.attempts = 2;
  t.error = "line one\nline two";
  s.save_trial(t);
  Trial first;
  first.id = 3;
  s.save_trial(first);
  const auto loaded = s.load_trial(7);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->parameters, t.parameters);
  EXPECT_EQ(loaded->status, TrialStatus::kRunning);
  ASSERT_EQ(loaded->metrics.intermediate.size(), 3U);
  EXPECT_EQ(loaded->metrics.intermediate[1].step, 2);
  EXPECT_EQ(loaded->metrics.intermediate[1].value, -1.5e-300);
  EXPECT_EQ(loaded->metrics.intermediate[2].value, 1e300);
  EXPECT_FALSE(loaded->metrics.final.has_value());
  EXPECT_DOUBLE_EQ(loaded->submitted_at, t.submitted_at);
  EXPECT_DOUBLE_EQ(loaded->started_at, t.started_at);
  EXPECT_EQ(loaded->attempts, 2);
  EXPECT_EQ(loaded->error, t.error);

  t.status = TrialStatus::kTrained;
  t.metrics.final = 0.875;
  t.ended_at = 1700000002.0;
  s.save_trial(t);
  const auto all = s.load_trials();
  ASSERT_EQ(all.size(), 2U) << "saving again replaces";
  EXPECT_EQ(all[0].id, 3);
  EXPECT_EQ(all[1].id, 7);
  EXPECT_EQ(all[1].status, TrialStatus::kTrained);
  EXPECT_EQ(all[1].metrics.final, std::optional<double>(0.875));
  const auto states = s.states();
  ASSERT_EQ(states.size(), 2U);
  EXPECT_EQ(states[1].id, 7);
  EXPECT_EQ(states[1].status, TrialStatus::kTrained);
}

// Meta values: any JSON, kept as given, replaced by a later set; a key never set is nullopt.
inline void check_meta(TrialStorage& s) {
  EXPECT_FALSE(s.meta("search").has_value());
  const nlohmann::json search = {{"space", {{"x", {{"_type", "uniform"}, {"_value", {0, 1}}}}}}, {"seed", 3}};
  s.set_meta("search", search);
  s.set_meta("worker", "host:12");
  EXPECT_EQ(s.meta("search"), std::optional<nlohmann::json>(search));
  EXPECT_EQ(s.meta("worker"), std::optional<nlohmann::json>("host:12"));
  s.set_meta("worker", "host:13");
  EXPECT_EQ(s.meta("worker"), std::optional<nlohmann::json>("host:13"));
}

// Create within a limit, claim exclusively, heartbeat, requeue a silent worker's trial, take it
// back (re-attach) or lose it to another worker.
inline void check_work_queue(TrialStorage& s) {
  ASSERT_EQ(s.create_trial({{"x", 1}}, 3), std::optional<int64_t>(0));
  ASSERT_EQ(s.create_trial({{"x", 2}}, 3), std::optional<int64_t>(1));
  ASSERT_EQ(s.create_trial({{"x", 3}}, 3, "owner:1"), std::optional<int64_t>(2));  // not claimable
  EXPECT_FALSE(s.create_trial({{"x", 4}}, 3)) << "the limit holds";

  auto a = s.claim_trial("a:1");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->id, 0);
  EXPECT_EQ(a->parameters["x"], 1);
  auto b = s.claim_trial("b:1");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->id, 1);
  EXPECT_FALSE(s.claim_trial("c:1")) << "trial 2 is owner:1's";
  auto states = s.states();
  ASSERT_EQ(states.size(), 3U);
  EXPECT_EQ(states[0].status, TrialStatus::kRunning);
  EXPECT_EQ(states[0].worker, "a:1");

  // a finishes; b goes silent.
  Trial done = *a;
  done.status = TrialStatus::kTrained;
  done.metrics.final = 0.5;
  EXPECT_TRUE(s.save_owned(done, "a:1"));
  EXPECT_FALSE(s.save_owned(done, "b:1")) << "only the owner writes";
  EXPECT_TRUE(s.heartbeat("b:1", {1}).lost.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_TRUE(s.requeue_stale(5.0).empty()) << "0.4 s of silence is not 5 s";
  s.heartbeat("owner:1", {2});
  const auto requeued = s.requeue_stale(0.2);
  ASSERT_EQ(requeued.size(), 1U);
  EXPECT_EQ(requeued[0].id, 1);
  EXPECT_EQ(requeued[0].worker, "b:1");
  auto t1 = s.load_trial(1);
  ASSERT_TRUE(t1);
  EXPECT_EQ(t1->status, TrialStatus::kWaiting);
  EXPECT_NE(t1->error.find("b:1 stopped beating"), std::string::npos) << t1->error;

  // b comes back before anyone claimed it: re-attached.
  auto beat = s.heartbeat("b:1", {1});
  EXPECT_EQ(beat.reattached, std::vector<int64_t>{1});
  EXPECT_FALSE(s.claim_trial("c:1"));
  // b goes silent again; c takes it; b has lost it.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  s.heartbeat("owner:1", {2});
  EXPECT_EQ(s.requeue_stale(0.2).size(), 1U);
  auto c = s.claim_trial("c:1");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, 1);
  EXPECT_EQ(s.heartbeat("b:1", {1}).lost, std::vector<int64_t>{1});
  Trial late = *c;
  late.status = TrialStatus::kTrained;
  EXPECT_FALSE(s.save_owned(late, "b:1"));
  EXPECT_TRUE(s.save_owned(late, "c:1"));

  // A dead worker (by the caller's judgement) is requeued at once; a retry is given back.
  EXPECT_EQ(s.requeue_stale(1000.0, [](const std::string& w) { return w == "owner:1"; }).size(), 1U);
  auto d = s.claim_trial("d:1");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id, 2);
  Trial retrying = *d;
  retrying.status = TrialStatus::kRetrying;
  EXPECT_TRUE(s.save_owned(retrying, "d:1"));
  EXPECT_TRUE(s.release(2, "d:1"));
  auto again = s.claim_trial("e:1");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->id, 2);
  const auto all = s.load_trials();
  ASSERT_EQ(all.size(), 3U);
  EXPECT_EQ(all[0].worker, "a:1");
  EXPECT_EQ(all[1].worker, "c:1");
  EXPECT_EQ(all[2].worker, "e:1");
}

}  // namespace baton::testing
