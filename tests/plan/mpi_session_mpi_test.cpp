// MpiSession under `mpirun -np 3` (label mpi): every rank runs every test, in the same order, so
// each run() is a collective call. Nodes local, n2, n1 go to ranks 0, 1, 2.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "baton/plan/mpi.h"
#include "baton/plan/session.h"

namespace baton {
namespace {

std::shared_ptr<ExecutionStep> fn(const std::string& name, StepFunction f) {
  return ExecutionStep::make(name, std::move(f));
}

// A group over three nodes whose outputs do not depend on timing.
TaskGroup make_group(std::vector<std::shared_ptr<TaskOutput>>& outputs) {
  TaskGroup g;
  auto sum = fn("sum", [](StepContext& c) { c.workspace().add("sum", static_cast<double>(c.iteration())); });
  sum->num_iter(10);
  outputs.push_back(g.add(Task(sum)).add_output("sum"));
  {
    Node n2("n2");
    auto setup = std::make_shared<StepSetup>();
    setup->init = [](Workspace& ws) { ws.set("seen", int64_t{0}); };
    auto inst = fn("inst", [](StepContext& c) {
      c.workspace().update("seen", [&](const std::optional<WorkspaceValue>& v) -> WorkspaceValue {
        const int64_t* n = v ? std::get_if<int64_t>(&*v) : nullptr;
        return (n ? *n : 0) + c.instance() + 1;
      });
    });
    inst->add_setup(SetupScope::kTask, setup);
    outputs.push_back(g.add(Task(inst, TaskOptions().num_instances(3))).add_output("seen"));
  }
  {
    Node n1("n1");
    auto t = fn("tensor", [](StepContext& c) {
      c.workspace().set("t", torch::arange(4, torch::kInt64).reshape({2, 2}));
    });
    Task task(t);
    outputs.push_back(task.add_output(std::vector<std::string>{"t", "label"}));
    g.add(std::move(task));
    g.add(Task(fn("label", [](StepContext& c) { c.workspace().set("label", std::string("on ") + c.node()); })));
  }
  return g;
}

nlohmann::json values(const std::vector<std::shared_ptr<TaskOutput>>& outputs) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& o : outputs) {
    for (const auto& v : o->get_all()) j.push_back(value_to_json(v));
  }
  return j;
}

TEST(PlanMpi, TheSameOutputsAsALocalSession) {
  MpiSession mpi;
  ASSERT_EQ(mpi.size(), 3) << "run under mpirun -np 3";
  std::vector<std::shared_ptr<TaskOutput>> local_outputs, mpi_outputs;
  TaskGroup local_group = make_group(local_outputs);
  LocalSession(2).run(local_group);
  TaskGroup mpi_group = make_group(mpi_outputs);
  EXPECT_EQ(mpi.rank_of(mpi_group, "local"), 0);
  EXPECT_EQ(mpi.rank_of(mpi_group, "n2"), 1);
  EXPECT_EQ(mpi.rank_of(mpi_group, "n1"), 2);
  mpi.run(mpi_group);
  if (mpi.rank() == 0) {
    EXPECT_EQ(values(mpi_outputs), values(local_outputs));
    EXPECT_EQ(std::get<std::string>(mpi_outputs[2]->get_all()[1]), "on n1");
    EXPECT_EQ(std::get<int64_t>(mpi_outputs[1]->get()), 6);
  } else {
    EXPECT_FALSE(mpi_outputs[0]->ready()) << "rank 0's outputs are not sent to the others without broadcast";
  }
}

TEST(PlanMpi, BroadcastOutputsAndAUserMap) {
  MpiSession mpi(MpiSessionOptions().node_ranks({{"n1", 0}}).broadcast_outputs(true));
  std::vector<std::shared_ptr<TaskOutput>> outputs;
  TaskGroup g = make_group(outputs);
  EXPECT_EQ(mpi.rank_of(g, "n1"), 0);
  mpi.run(g);
  EXPECT_EQ(std::get<double>(outputs[0]->get()), 45.0) << "on rank " << mpi.rank();
  EXPECT_TRUE(torch::equal(std::get<at::Tensor>(outputs[2]->get()), torch::arange(4, torch::kInt64).reshape({2, 2})));

  MpiSession bad(MpiSessionOptions().node_ranks({{"n2", 3}}));
  std::vector<std::shared_ptr<TaskOutput>> unused;
  TaskGroup g2 = make_group(unused);
  EXPECT_THROW(bad.run(g2), std::invalid_argument) << "every rank refuses the same map";
}

TEST(PlanMpi, AFailureOnOneRankCancelsTheOthersAndSurfacesEverywhere) {
  MpiSession mpi;
  std::atomic<bool> saw_cancel{false};
  TaskGroup g;
  // On rank 0: would run for 60 s unless cancelled.
  g.add(Task(fn("waits", [&](StepContext& c) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
      if (c.cancelled()) {
        saw_cancel = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  })));
  {
    Node n2("n2");
    g.add(Task(fn("waits_too", [](StepContext& c) {
      while (!c.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    })));
  }
  {
    Node n1("n1");
    g.add(Task(fn("boom", [](StepContext&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      throw std::runtime_error("boom");
    })));
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    mpi.run(g);
    ADD_FAILURE() << "run() returned on rank " << mpi.rank();
  } catch (const PlanError& e) {
    EXPECT_EQ(e.rank(), 2);
    EXPECT_EQ(e.node(), "n1");
    EXPECT_EQ(e.task(), "n1/boom");
    EXPECT_EQ(e.what_happened(), "boom");
    EXPECT_NE(std::string(e.what()).find("rank 2: task n1/boom on node n1"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  if (mpi.rank() == 0) {
    EXPECT_TRUE(saw_cancel.load());
  }

  // The next run is not disturbed by this one's notices.
  std::vector<std::shared_ptr<TaskOutput>> outputs;
  TaskGroup ok = make_group(outputs);
  EXPECT_NO_THROW(mpi.run(ok));
  if (mpi.rank() == 0) {
    EXPECT_EQ(std::get<double>(outputs[0]->get()), 45.0);
  }
}

TEST(PlanMpi, GlobalWorkspacesAreKeptOnTheirRankAcrossRuns) {
  for (auto type : {WorkspaceType::kGlobal, WorkspaceType::kPrivate}) {
    MpiSession mpi(MpiSessionOptions().node_ranks({{"n2", 1}}));  // new node workspaces
    std::vector<double> seen;
    for (int run = 0; run < 2; ++run) {
      TaskGroup g(type);
      Node n2("n2");
      Task t(fn("count", [](StepContext& c) { c.workspace().add("runs", 1.0); }));
      auto out = t.add_output("runs");
      g.add(std::move(t));
      mpi.run(g);
      if (mpi.rank() == 0) seen.push_back(std::get<double>(out->get()));
      if (mpi.rank() == 1) {
        EXPECT_EQ(mpi.node_workspace("n2")->has("runs"), type == WorkspaceType::kGlobal);
      }
    }
    if (mpi.rank() == 0) {
      EXPECT_EQ(seen, (type == WorkspaceType::kGlobal ? std::vector<double>{1, 2} : std::vector<double>{1, 1}));
    }
  }
}

}  // namespace
}  // namespace baton
