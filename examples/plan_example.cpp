// Task groups on named nodes: the example of Caffe2's TaskGroup docstring, in baton.
//
//   build/bin/plan_example --session local               every node in this process
//   mpirun -np 3 build/bin/plan_example --session mpi    nodes local, n2, n1 on ranks 0, 1, 2
//
// s1 and s2 run on node "local", s3 and s5 on "n2", s4 on "n1", all at once. s3 is a task of two
// instances with a task setup (once, around both) and an instance setup (once per instance, in
// the instance's own workspace). A report step runs on n2 every 5 ms while n2's tasks run, and
// once after. Progress goes to stderr; the last line on stdout is {"outputs": {...}}, the same for
// both sessions.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <string>

#include <torch/torch.h>

#include "baton/plan/mpi.h"
#include "baton/plan/session.h"

namespace {

std::mutex log_mutex;
void say(const baton::StepContext& c, const std::string& what) {
  std::lock_guard lock(log_mutex);
  std::fprintf(stderr, "[%s %s#%d] %s\n", c.node().c_str(), c.task().c_str(), c.instance(), what.c_str());
}
void say(const std::string& what) {
  std::lock_guard lock(log_mutex);
  std::fprintf(stderr, "%s\n", what.c_str());
}

using baton::ExecutionStep;
using baton::StepContext;
using baton::Workspace;

struct Outputs {
  std::map<std::string, std::shared_ptr<baton::TaskOutput>> named;
};

// The group of the docstring: every rank builds the same one.
baton::TaskGroup build(Outputs& out) {
  baton::TaskGroup tg;

  // These tasks go to the default node "local".
  auto s1 = ExecutionStep::make(
      "s1", [](StepContext& c) { c.workspace().add("s1_sum", static_cast<double>(c.iteration() + 1)); });
  s1->num_iter(100);  // 1 + 2 + ... + 100
  out.named["s1_sum"] = tg.add(baton::Task(s1)).add_output("s1_sum");

  auto s2 = ExecutionStep::make("s2", [](StepContext& c) {
    c.workspace().set("s2_weights", torch::arange(6, torch::kFloat32).reshape({2, 3}) * 0.5);
  });
  out.named["s2_weights"] = tg.add(baton::Task(s2)).add_output("s2_weights");

  {
    baton::Node n2("n2");
    // s3: two instances; the task setup makes the total both instances add to, each instance
    // counts its own ticks in its own workspace and adds them to the total on exit.
    auto task_setup = std::make_shared<baton::StepSetup>();
    task_setup->init = [](Workspace& ws) {
      ws.set("s3_total", int64_t{0});
      ws.set("s3_scale", int64_t{3});
      say("n2 task s3: setup (once, before both instances)");
    };
    task_setup->exit = [](Workspace& ws) { say("n2 task s3: exit, total " + baton::to_string(*ws.get("s3_total"))); };
    auto instance_setup = std::make_shared<baton::StepSetup>();
    instance_setup->init = [](Workspace& ws) { ws.set("ticks", int64_t{0}); };
    instance_setup->exit = [](Workspace& ws) {
      const int64_t add = ws.get_int("ticks") * ws.get_int("s3_scale");
      ws.update("s3_total", [&](const std::optional<baton::WorkspaceValue>& v) -> baton::WorkspaceValue {
        const int64_t* total = v ? std::get_if<int64_t>(&*v) : nullptr;
        return (total ? *total : 0) + add;
      });
    };
    auto s3 = ExecutionStep::make("s3", [](StepContext& c) {
      c.workspace().set("ticks", c.workspace().get_int("ticks") + 1);
      if (c.iteration() == 4) say(c, "5 ticks");
    });
    s3->num_iter(5);
    s3->add_setup(baton::SetupScope::kTask, task_setup);
    s3->add_setup(baton::SetupScope::kInstance, instance_setup);
    out.named["s3_total"] = tg.add(baton::Task(s3, baton::TaskOptions().num_instances(2))).add_output("s3_total");
  }
  {
    baton::Node n1("n1");
    auto s4 = ExecutionStep::make("s4", [](StepContext& c) {
      auto x = torch::linspace(0, 1, 11, torch::kFloat64);
      c.workspace().set("s4_mean", (x * x).mean().item<double>());
    });
    out.named["s4_mean"] = tg.add(baton::Task(s4)).add_output("s4_mean");
  }
  {
    baton::Node n2("n2");
    // s5 loops until it sets its own stop flag.
    auto s5 = ExecutionStep::make("s5", [](StepContext& c) {
      const int64_t i = c.workspace().has("s5_iterations") ? c.workspace().get_int("s5_iterations") + 1 : 1;
      c.workspace().set("s5_iterations", i);
      if (i == 7) c.workspace().set("s5_stop", true);
    });
    s5->should_stop_flag("s5_stop");
    baton::Task t5(s5);
    out.named["s5_iterations"] = t5.add_output("s5_iterations");
    out.named["n2_reported"] = t5.add_output("n2_reported");
    tg.add(std::move(t5));
    tg.report_step(ExecutionStep::make("n2_report", [](StepContext& c) { c.workspace().set("n2_reported", true); }),
                   "n2", 5);
  }
  return tg;
}

}  // namespace

int main(int argc, char** argv) {
  std::string session = "local";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--session") && i + 1 < argc) {
      session = argv[++i];
    } else {
      std::fprintf(stderr, "usage: plan_example [--session local|mpi]\n");
      return 2;
    }
  }
  if (session != "local" && session != "mpi") {
    std::fprintf(stderr, "plan_example: --session '%s': expected local or mpi\n", session.c_str());
    return 2;
  }
  torch::set_num_threads(1);
  Outputs out;
  baton::TaskGroup tg = build(out);
  bool print = true;
  try {
    if (session == "local") {
      baton::LocalSession().run(tg);
    } else {
      baton::MpiSession mpi;
      for (const auto& node : tg.used_nodes())
        if (mpi.rank() == 0)
          say("node " + node + " runs on rank " + std::to_string(mpi.rank_of(tg, node)) + " of " +
              std::to_string(mpi.size()));
      mpi.run(tg);
      print = mpi.rank() == 0;  // the outputs are gathered there
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plan_example: %s\n", e.what());
    return 1;
  }
  if (!print) return 0;
  nlohmann::json outputs = nlohmann::json::object();
  for (const auto& [name, output] : out.named) outputs[name] = baton::value_to_plain_json(output->get());
  std::cout << nlohmann::json{{"outputs", outputs}}.dump() << std::endl;
  return 0;
}
