// Per-task overhead of LocalSession, and of concurrent substeps, side by side with the same work
// as a oneTBB flow graph (when built with libtbb-dev). Prints one JSON line per case.
//
//   build/bin/plan_bench [--tasks 100000] [--threads 2] [--repeat 3]
//   mpirun -np 3 build/bin/plan_bench --mpi-runs 1000     the cost of one MpiSession::run of a
//       group with one empty task on each of 3 nodes, against LocalSession::run of the same group
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "baton/plan/mpi.h"
#include "baton/plan/session.h"

#ifdef BATON_HAVE_TBB
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#endif

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::atomic<int64_t> counter{0};

// n empty tasks in one group (one node), building the group included.
double baton_tasks(int n, int threads) {
  baton::LocalSession session(threads);
  const auto t0 = std::chrono::steady_clock::now();
  baton::TaskGroup group;
  auto step =
      baton::ExecutionStep::make("empty", [](baton::StepContext&) { counter.fetch_add(1, std::memory_order_relaxed); });
  for (int i = 0; i < n; ++i) group.add(baton::Task(step));
  session.run(group);
  return seconds_since(t0);
}

// One step with n concurrent substeps.
double baton_substeps(int n, int threads) {
  baton::LocalSession session(threads);
  const auto t0 = std::chrono::steady_clock::now();
  auto leaf =
      baton::ExecutionStep::make("empty", [](baton::StepContext&) { counter.fetch_add(1, std::memory_order_relaxed); });
  std::vector<std::shared_ptr<baton::ExecutionStep>> subs(static_cast<std::size_t>(n), leaf);
  auto parent = baton::ExecutionStep::make("parent", subs);
  parent->concurrent_substeps();
  baton::TaskGroup group;
  group.add(baton::Task(parent));
  session.run(group);
  return seconds_since(t0);
}

// `runs` runs of a group of one empty task on each of nodes a, b, c; seconds per run.
template <typename Session>
double group_runs(Session& session, int runs) {
  auto step =
      baton::ExecutionStep::make("empty", [](baton::StepContext&) { counter.fetch_add(1, std::memory_order_relaxed); });
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < runs; ++r) {
    baton::TaskGroup group;
    for (const char* node : {"a", "b", "c"}) group.add(baton::Task(step, baton::TaskOptions().node(node)));
    session.run(group);
  }
  return seconds_since(t0) / runs;
}

int mpi_main(int runs, int threads) {
  baton::MpiSession mpi(baton::MpiSessionOptions().threads(threads));
  baton::LocalSession local(threads);
  group_runs(mpi, 10);  // warm-up
  const double mpi_s = group_runs(mpi, runs);
  const double local_s = mpi.rank() == 0 ? group_runs(local, runs) : 0;
  if (mpi.rank() == 0) {
    nlohmann::json out = {{"ranks", mpi.size()},
                          {"runs", runs},
                          {"mpi_session_us_per_run", mpi_s * 1e6},
                          {"local_session_us_per_run", local_s * 1e6}};
    std::printf("%s\n", out.dump().c_str());
  }
  return 0;
}

#ifdef BATON_HAVE_TBB
// The same as a flow graph: a broadcast start node feeding n continue nodes, waited for.
double tbb_tasks(int n, int threads) {
  oneapi::tbb::task_arena arena(threads);
  double dt = 0;
  arena.execute([&] {
    const auto t0 = std::chrono::steady_clock::now();
    oneapi::tbb::flow::graph g;
    oneapi::tbb::flow::broadcast_node<oneapi::tbb::flow::continue_msg> start(g);
    std::vector<std::unique_ptr<oneapi::tbb::flow::continue_node<oneapi::tbb::flow::continue_msg>>> nodes;
    nodes.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      nodes.push_back(std::make_unique<oneapi::tbb::flow::continue_node<oneapi::tbb::flow::continue_msg>>(
          g, [](const oneapi::tbb::flow::continue_msg&) { counter.fetch_add(1, std::memory_order_relaxed); }));
      oneapi::tbb::flow::make_edge(start, *nodes.back());
    }
    start.try_put(oneapi::tbb::flow::continue_msg());
    g.wait_for_all();
    dt = seconds_since(t0);
  });
  return dt;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  int tasks = 100000, threads = 2, repeat = 3, mpi_runs = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tasks"))
      tasks = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeat"))
      repeat = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--mpi-runs"))
      mpi_runs = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: plan_bench [--tasks N] [--threads T] [--repeat R] [--mpi-runs N]\n");
      return 2;
    }
  }
  if (tasks < 1 || threads < 1 || repeat < 1 || mpi_runs < 0) {
    std::fprintf(stderr, "plan_bench: --tasks, --threads and --repeat must be whole numbers of at least 1\n");
    return 2;
  }
  if (mpi_runs > 0) return mpi_main(mpi_runs, threads);
  auto best = [&](auto f) {
    double b = 1e300;
    for (int r = 0; r < repeat; ++r) b = std::min(b, f(tasks, threads));
    return b;
  };
  const double tasks_s = best(baton_tasks);
  const double subs_s = best(baton_substeps);
  nlohmann::json out = {{"tasks", tasks},
                        {"threads", threads},
                        {"baton_us_per_task", tasks_s / tasks * 1e6},
                        {"baton_us_per_concurrent_substep", subs_s / tasks * 1e6}};
#ifdef BATON_HAVE_TBB
  const double tbb_s = best(tbb_tasks);
  out["tbb_flow_graph_us_per_node"] = tbb_s / tasks * 1e6;
  out["ratio_tasks_vs_tbb"] = tasks_s / tbb_s;
  out["ratio_substeps_vs_tbb"] = subs_s / tbb_s;
#else
  out["tbb_flow_graph_us_per_node"] = nullptr;
#endif
  std::printf("%s\n", out.dump().c_str());
  return counter.load() > 0 ? 0 : 1;
}
