// Workspaces (src/plan/workspace.cpp): one per instance, private and global ones, values and JSON.
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "baton/plan/session.h"
#include "plan/plan_fixtures.h"

namespace baton {
namespace {

using namespace plan_fixtures;  // NOLINT(google-build-using-namespace)

using Steps = std::vector<std::shared_ptr<ExecutionStep>>;

TEST(Plan, InstanceWorkspacesAreSeparateAndSeeTheTasks) {
  auto setup = std::make_shared<StepSetup>(StepSetup{[](Workspace& ws) {
                                                       ws.set("shared", int64_t{7});
                                                       ws.set("seen", 0.0);
                                                     },
                                                     [](Workspace& ws) { ws.set("leaked", ws.has("mine")); }});
  auto body = fn("look", [](StepContext& c) {
    c.workspace().set("mine", int64_t{c.instance()});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (c.workspace().get_int("mine") != c.instance()) throw std::runtime_error("instances share a workspace");
    c.workspace().add("seen", static_cast<double>(c.workspace().get_int("shared")));  // the task's value
  });
  body->add_setup(SetupScope::kTask, setup);
  TaskGroup group;
  Task task(body, TaskOptions().num_instances(3));
  auto seen = task.add_output("seen");
  auto leaked = task.add_output("leaked");
  group.add(std::move(task));
  LocalSession session(3);
  session.run(group);
  EXPECT_EQ(std::get<double>(seen->get()), 21.0);
  EXPECT_FALSE(std::get<bool>(leaked->get()));
}

TEST(Plan, PrivateWorkspacesAreDiscardedGlobalOnesKept) {
  for (auto type : {WorkspaceType::kPrivate, WorkspaceType::kGlobal}) {
    LocalSession session(2);
    double last = 0;
    for (int run = 0; run < 2; ++run) {
      TaskGroup group(type);
      Task task(fn("inc", [](StepContext& c) { c.workspace().add("runs", 1); }));
      auto out = task.add_output("runs");
      group.add(std::move(task));
      session.run(group);
      last = std::get<double>(out->get());
    }
    EXPECT_EQ(last, type == WorkspaceType::kGlobal ? 2.0 : 1.0);
    EXPECT_EQ(session.node_workspace("local")->has("runs"), type == WorkspaceType::kGlobal);
  }
  TaskGroup mixed(WorkspaceType::kGlobal);
  EXPECT_THROW(mixed.add(Task(nullptr, TaskOptions().workspace_type(WorkspaceType::kPrivate))), std::invalid_argument);
}

TEST(Plan, WorkspaceValuesAndErrors) {
  auto ws = Workspace::create();
  ws->set("i", int64_t{3});
  ws->set("s", std::string("x"));
  auto child = ws->child();
  EXPECT_EQ(child->get_int("i"), 3);
  EXPECT_EQ(child->get_double("i"), 3.0);
  child->set("i", int64_t{4});
  EXPECT_EQ(ws->get_int("i"), 3);
  EXPECT_THROW(child->get_double("s"), std::invalid_argument);
  EXPECT_THROW(child->get_double("none"), std::out_of_range);
  EXPECT_EQ(child->names(), std::vector<std::string>{"i"});
}

TEST(Plan, WorkspaceValuesRoundTripAsJson) {
  const std::vector<WorkspaceValue> values = {1.25,
                                              int64_t{-7},
                                              true,
                                              std::string("x\"y"),
                                              torch::tensor({0.1F, 2.5F}).reshape({1, 2}),
                                              torch::arange(6, torch::kInt32),
                                              torch::tensor({true, false}),
                                              torch::tensor({1.0 / 3.0}, torch::kFloat64)};
  for (const auto& v : values) {
    const auto back = value_from_json(nlohmann::json::parse(value_to_json(v).dump()));
    ASSERT_EQ(back.index(), v.index()) << value_to_json(v).dump();
    if (const auto* t = std::get_if<at::Tensor>(&v)) {
      const auto& u = std::get<at::Tensor>(back);
      EXPECT_EQ(u.scalar_type(), t->scalar_type());
      EXPECT_TRUE(torch::equal(u, *t)) << value_to_json(v).dump();
    } else {
      EXPECT_EQ(value_to_json(back), value_to_json(v));
    }
  }
  EXPECT_EQ(value_to_plain_json(torch::arange(4, torch::kInt64).reshape({2, 2})).dump(), "[[0,1],[2,3]]");
  EXPECT_THROW(value_from_json(nlohmann::json{{"q", 1}}), std::invalid_argument);
  EXPECT_THROW(value_from_json(nlohmann::json::parse(R"({"t": {"dtype": "float32", "shape": [3], "data": [1]}})")),
               std::invalid_argument);
  EXPECT_THROW(value_from_json(nlohmann::json::parse(R"({"t": {"dtype": "complex", "shape": [1], "data": [1]}})")),
               std::invalid_argument);
}

}  // namespace
}  // namespace baton
