// Checks of a TrialStorage's work queue, shared by the SQLite (unit) and PostgreSQL tests.
#pragma once

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "baton/exec/storage.h"

namespace baton::testing {

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
